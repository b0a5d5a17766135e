//! Integration tests of the emulators, one binary (it saves link time on 2 cores):
//! real HTTP on 127.0.0.1, requests signed by the providers' own signers.
mod route53;
mod support;

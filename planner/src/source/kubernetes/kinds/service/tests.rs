//! external-dns v0.22.0's `source/service_test.go` cases, ported.

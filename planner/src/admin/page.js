"use strict";
// The status page: fetch the fragment every 2 s with the token (under [auth]), post
// approvals. No data lives in this page itself.
(function () {
  var KEY = "dnsplane-token";
  var needsToken = document.body.dataset.auth === "token";
  var live = document.getElementById("live");
  var login = document.getElementById("login");
  var message = document.getElementById("message");
  var conn = document.getElementById("conn");
  function headers(extra) {
    var h = extra || {};
    var t = sessionStorage.getItem(KEY);
    if (needsToken && t) { h["Authorization"] = "Bearer " + t; }
    return h;
  }
  function say(text, ok) {
    message.textContent = text;
    message.className = ok ? "ok" : "bad";
  }
  function askToken(why) {
    login.hidden = false;
    if (why) { say(why, false); }
  }
  function refresh() {
    if (needsToken && !sessionStorage.getItem(KEY)) { askToken(); return; }
    fetch("ui/live", { headers: headers(), cache: "no-store" }).then(function (r) {
      return r.text().then(function (body) {
        if (r.ok) {
          live.innerHTML = body;
          conn.textContent = "live, updated every 2 s";
        } else if (r.status === 401) {
          sessionStorage.removeItem(KEY);
          askToken("The token was refused: " + body);
        } else {
          conn.textContent = "error " + r.status + ": " + body;
        }
      });
    }).catch(function (e) { conn.textContent = "cannot reach the planner: " + e; });
  }
  login.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var t = document.getElementById("token").value.trim();
    if (!t) { return; }
    sessionStorage.setItem(KEY, t);
    document.getElementById("token").value = "";
    login.hidden = true;
    say("", true);
    refresh();
  });
  function approve(zone, digest, account) {
    return fetch("ui/approve", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify({ zone: zone, account: account || "", digest: digest }),
    }).then(function (r) {
      return r.text().then(function (body) {
        say((r.ok ? "" : "Approve refused (" + r.status + "): ") + body, r.ok);
        refresh();
        return r.status;
      });
    }).catch(function (e) { say("Approve failed: " + e, false); });
  }
  window.dnsplaneApprove = approve;
  live.addEventListener("click", function (ev) {
    var b = ev.target.closest("button.approve");
    if (!b || b.disabled) { return; }
    approve(b.dataset.zone, b.dataset.digest, b.dataset.account);
  });
  refresh();
  setInterval(refresh, 2000);
})();

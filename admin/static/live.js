// Live counts for the dashboard: an element with data-live names a JSON
// URL of the dashboard; every element with data-count="queue/state" shows
// that number. The page asks again 2 s after each answer (so at most one
// request every 2 s) while it is visible, and never runs inline code.
(function () {
  "use strict";
  var src = document.querySelector("[data-live]");
  if (!src || !window.fetch) { return; }
  var url = src.getAttribute("data-live");
  var period = 2000;
  function show(data) {
    var nodes = document.querySelectorAll("[data-count]");
    for (var i = 0; i < nodes.length; i++) {
      var parts = nodes[i].getAttribute("data-count").split("/");
      var q = data.queues && data.queues[parts[0]];
      if (q && typeof q[parts[1]] === "number") {
        var text = String(q[parts[1]]);
        if (nodes[i].textContent !== text) {
          nodes[i].textContent = text;
          nodes[i].classList.add("changed");
        }
      }
    }
    src.textContent = "live " + new Date().toLocaleTimeString();
    src.classList.remove("stale");
  }
  function tick() {
    if (document.hidden) { setTimeout(tick, period); return; }
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
      .then(show)
      .catch(function () { src.classList.add("stale"); src.textContent = "not live"; })
      .then(function () { setTimeout(tick, period); });
  }
  setTimeout(tick, period);
})();

// The dashboard's only script: no data reaches the page through it as
// markup. It refreshes a running instance's page, keeps relative times
// current, copies payloads, and draws the queues page's throughput chart
// from same-origin JSON with DOM calls (textContent, setAttribute).
(function () {
  "use strict";

  // Auto-refresh: every data-refresh seconds while the box is ticked
  // (remembered across reloads).
  var secs = Number(document.body.dataset.refresh || 0);
  var box = document.getElementById("autorefresh");
  if (secs && box) {
    var key = "duroxide.autorefresh";
    if (window.localStorage && localStorage.getItem(key) === "off") box.checked = false;
    box.addEventListener("change", function () {
      if (window.localStorage) localStorage.setItem(key, box.checked ? "on" : "off");
    });
    setInterval(function () { if (box.checked) location.reload(); }, secs * 1000);
  }

  // Relative times, as the server wrote them (pages.go relative).
  function relative(ms) {
    var future = ms < 0, d = Math.abs(ms) / 1000, s;
    if (d < 5) return "just now";
    if (d < 60) s = Math.floor(d) + " s";
    else if (d < 3600) s = Math.floor(d / 60) + " min";
    else if (d < 48 * 3600) s = Math.floor(d / 3600) + " h";
    else s = Math.floor(d / 86400) + " days";
    return future ? "in " + s : s + " ago";
  }
  function tickTimes() {
    var els = document.querySelectorAll("time[datetime]");
    for (var i = 0; i < els.length; i++) {
      var t = Date.parse(els[i].getAttribute("datetime"));
      if (!isNaN(t)) els[i].textContent = relative(Date.now() - t);
    }
  }
  setInterval(tickTimes, 10000);

  // Copy buttons copy the payload next to them.
  function copied(btn) {
    btn.classList.add("copied");
    btn.textContent = "copied";
    setTimeout(function () { btn.classList.remove("copied"); btn.textContent = "copy"; }, 2000);
  }
  function fallbackCopy(text, btn) {
    var ta = document.createElement("textarea");
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(ta);
    if (ok) copied(btn); else btn.textContent = "copy failed";
  }
  document.addEventListener("click", function (ev) {
    var btn = ev.target;
    if (!btn.classList || !btn.classList.contains("copy")) return;
    var pre = btn.parentNode.querySelector("pre");
    if (!pre) return;
    var text = pre.textContent;
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { copied(btn); }, function () { fallbackCopy(text, btn); });
    } else {
      fallbackCopy(text, btn);
    }
  });

  // The throughput chart: polls the sample endpoint every 2 s and plots
  // terminal instances per second (bars) and the queue depths (lines).
  var fig = document.getElementById("throughput");
  if (!fig) return;
  var svg = document.getElementById("throughput-chart");
  var status = document.getElementById("throughput-status");
  var NS = "http://www.w3.org/2000/svg";
  var W = 800, H = 160, L = 40, B = 18, MAX = 60;
  var samples = [];
  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  }
  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var rates = [], top = 1;
    for (var i = 1; i < samples.length; i++) {
      var a = samples[i - 1], b = samples[i];
      var dt = (Date.parse(b.at) - Date.parse(a.at)) / 1000;
      var done = (b.completed_instances + b.failed_instances) - (a.completed_instances + a.failed_instances);
      var r = dt > 0 ? Math.max(done, 0) / dt : 0;
      rates.push(r);
      top = Math.max(top, r);
    }
    var depthTop = 1;
    samples.forEach(function (s) { depthTop = Math.max(depthTop, s.orchestrator_queue, s.worker_queue); });
    var step = (W - L - 10) / MAX;
    for (var g = 0; g <= 4; g++) {
      var y = 6 + (H - B - 6) * g / 4;
      el("line", { "class": "grid", x1: L, y1: y, x2: W - 10, y2: y });
      el("text", { x: 2, y: y + 3 }, (top * (4 - g) / 4).toFixed(1));
    }
    rates.forEach(function (r, i) {
      var h = (H - B - 6) * r / top;
      el("rect", { "class": "tput", x: (L + (i + 1) * step).toFixed(1), y: (H - B - h).toFixed(1), width: Math.max(step - 2, 1).toFixed(1), height: h.toFixed(1) });
    });
    ["orchestrator_queue", "worker_queue"].forEach(function (k, j) {
      if (samples.length < 2) return;
      var pts = samples.map(function (s, i) {
        return (L + i * step + step / 2).toFixed(1) + "," + (H - B - (H - B - 6) * s[k] / depthTop).toFixed(1);
      });
      el("polyline", { "class": j ? "depth-w" : "depth-o", points: pts.join(" ") });
    });
    el("text", { x: L, y: H - 4 }, "per second, last " + samples.length + " polls (max " + top.toFixed(1) + "/s; queue depth max " + depthTop + ")");
    fig.dataset.samples = String(samples.length);
    fig.dataset.last = rates.length ? rates[rates.length - 1].toFixed(2) : "";
  }
  function poll() {
    fetch(fig.dataset.url, { credentials: "same-origin" }).then(function (res) {
      if (!res.ok) throw new Error("HTTP " + res.status);
      return res.json();
    }).then(function (s) {
      samples.push(s);
      if (samples.length > MAX) samples.shift();
      status.textContent = "";
      draw();
    }).catch(function (e) { status.textContent = "poll failed: " + e.message; });
  }
  poll();
  setInterval(poll, 2000);
})();

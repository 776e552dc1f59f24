// Refreshes a running instance's page every data-refresh seconds while
// the auto-refresh box is ticked (remembered across reloads).
(function () {
  "use strict";
  var secs = Number(document.body.dataset.refresh || 0);
  var box = document.getElementById("autorefresh");
  if (!secs || !box) return;
  var key = "duroxide.autorefresh";
  if (window.localStorage && localStorage.getItem(key) === "off") box.checked = false;
  box.addEventListener("change", function () {
    if (window.localStorage) localStorage.setItem(key, box.checked ? "on" : "off");
  });
  setInterval(function () { if (box.checked) location.reload(); }, secs * 1000);
})();

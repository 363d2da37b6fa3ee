// The crawl page follows its crawl: every 2 s it reads the progress JSON and updates the
// counts and the bar; when the crawl is final it reloads once to list every snapshot.
(function () {
  var box = document.getElementById("crawl-progress");
  if (!box || box.dataset.finished === "true") return;
  var seen = -1;
  function text(id, value) { document.getElementById(id).textContent = value; }
  function poll() {
    fetch(box.dataset.url, {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (p) {
      var status = document.getElementById("crawl-status");
      status.textContent = p.status;
      status.className = "status " + p.status;
      text("crawl-snapshots", (p.snapshots.sealed || 0) + " of " + p.snapshots.total + " sealed");
      text("crawl-results", p.results.done + " of " + p.results.total + " done" + (p.results.failed ? ", " + p.results.failed + " failed" : ""));
      document.getElementById("crawl-bar").style.width = p.percent + "%";
      if (p.finished || (seen >= 0 && p.snapshots.total !== seen)) { window.location.reload(); return; }
      seen = p.snapshots.total;
      setTimeout(poll, 2000);
    }).catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();

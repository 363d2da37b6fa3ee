// The crawl page follows its crawl: every 2 s it reads the progress JSON and updates the
// counts, the bar and the state (and title) of each listed snapshot; when new snapshots
// appear (links found) it reloads to list them, and stops once the crawl is final.
(function () {
  var box = document.getElementById("crawl-progress");
  if (!box || box.dataset.finished === "true") return;
  function text(id, value) { document.getElementById(id).textContent = value; }
  function updateRows(rows) {
    rows.forEach(function (row) {
      var tr = document.querySelector('#crawl-snapshot-list tr[data-snapshot="' + row.id + '"]');
      if (!tr) return;
      var badge = tr.querySelector(".status");
      badge.textContent = row.status;
      badge.className = "status " + row.status;
      var title = tr.querySelector(".title");
      if (title && row.title) title.textContent = row.title.length > 100 ? row.title.slice(0, 99) + "\u2026" : row.title;
    });
  }
  function poll() {
    fetch(box.dataset.url, {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (p) {
      var status = document.getElementById("crawl-status");
      status.textContent = p.status;
      status.className = "status " + p.status;
      text("crawl-snapshots", (p.snapshots.sealed || 0) + " of " + p.snapshots.total + " sealed");
      text("crawl-results", p.results.done + " of " + p.results.total + " done" + (p.results.failed ? ", " + p.results.failed + " failed" : ""));
      document.getElementById("crawl-bar").style.width = p.percent + "%";
      updateRows(p.rows);
      var listed = document.querySelectorAll("#crawl-snapshot-list tr[data-snapshot]").length;
      if (listed < p.rows.length) { window.location.reload(); return; }
      if (p.finished) return;
      setTimeout(poll, 2000);
    }).catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();

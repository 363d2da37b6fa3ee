// The snapshot page's capture cards: a click shows that capture in the main frame and marks
// its card. Without this script the links still open the capture (target="capture-frame").
document.addEventListener("click", function (event) {
  var link = event.target.closest("#captures a[target=capture-frame]");
  var frame = document.getElementById("capture-frame");
  if (!link || !frame) return;
  event.preventDefault();
  frame.src = link.href;
  document.querySelectorAll("#captures figure.capture").forEach(function (card) {
    card.classList.toggle("selected", card.contains(link));
  });
});

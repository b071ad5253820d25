/* Bookwise widget placeholder: the real bundle is built from widget/ and served from this path. */
(function () {
  if (window.Bookwise) return;
  window.Bookwise = { placeholder: true, open: function () {}, close: function () {}, destroy: function () {} };
  console.info("Bookwise: the widget bundle is not built yet (see widget/).");
})();

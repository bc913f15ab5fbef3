// The front door of GET /tracker.js: configured by the data- attributes of its own script
// tag, it defines window.reftrack and records the click of the landing URL. The line
// `/* @core */` stands for src/core.js (clients/js/build.mjs writes web/tracker.js).
/*! Reftrack browser tracker (MIT). Docs: docs/tracker.md in the Reftrack repository; source: clients/js/src/. */
(function (w, d) {
'use strict';
/* @core */

if (w.reftrack && w.reftrack.getClickId) return; // included twice: the first one works
var o = {}, t, err;
try {
  var s = d.currentScript || d.querySelector('script[data-program-id]');
  var attr = function (n) { return s && s.getAttribute('data-' + n); };
  var dbg = attr('debug');
  o.debug = dbg !== null && dbg !== 'false' && dbg !== '0';
  o.cookieDomain = attr('cookie-domain');
  o.apiHost = (attr('api-host') || new URL(s.src, location.href).origin).replace(/\/+$/, '');
  o.programId = /^\d+$/.test(attr('program-id')) ? +attr('program-id') : 0;
} catch (e) { err = e; }
t = createTracker(w, d, o);
w.reftrack = { getClickId: t.getClickId, trackLead: t.trackLead };
if (err) t.log('init failed', err);
else if (!o.programId) t.log('data-program-id is missing or invalid');
else t.trackClick();
})(window, document);

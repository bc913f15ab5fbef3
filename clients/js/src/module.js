// The front door of the npm package: an ES module configured by init(options), safe to
// import where there is no window (server-side rendering). The line `/* @core */` stands
// for src/core.js (clients/js/build.mjs writes index.js). Types: index.d.ts.
/*! @reftrack/tracker (MIT): the Reftrack browser tracker as an ES module. Docs: README.md. */
/* @core */

var tracker = null, first = null;

function notConfigured() { return Promise.resolve({ success: false, error: 'tracker not configured' }); }

// The configured tracker, else one without a program (it reads the cookie and sends
// nothing), else null outside a browser.
function current() {
  if (tracker) return tracker;
  return typeof window === 'undefined' ? null : createTracker(window, document, {});
}

/**
 * Configures the tracker and records the click of the page URL's `aff`, like the script
 * tag does on load. Only the first call per page counts: later ones return its promise.
 * Resolves with the click's answer, or null when nothing was sent; never rejects.
 */
export function init(options) {
  if (first) return first;
  if (typeof window === 'undefined') return notConfigured();
  var o = options || {}, id = String(o.programId), programId = /^\d+$/.test(id) ? +id : 0;
  tracker = createTracker(window, document, {
    programId: programId,
    apiHost: String(o.apiHost || '').replace(/\/+$/, ''),
    cookieDomain: o.cookieDomain,
    debug: !!o.debug
  });
  if (!programId) tracker.log('programId is missing or invalid');
  return (first = tracker.trackClick());
}

/**
 * Records the click of the current URL's `aff` (call it after a client-side navigation).
 * Sends nothing without `aff`, or for the link of the last click. Never rejects.
 */
export function trackClick() {
  var t = current();
  return t ? t.trackClick() : notConfigured();
}

/** The click id stored by the last tracked click, or null. */
export function getClickId() {
  var t = current();
  return t ? t.getClickId() : null;
}

/** Records a signup (browser-mode lead). Resolves with the API's answer; never rejects. */
export function trackLead(lead) {
  var t = current();
  return t ? t.trackLead(lead) : notConfigured();
}

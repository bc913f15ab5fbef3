/*! @reftrack/tracker (MIT): the Reftrack browser tracker as an ES module. Docs: README.md. */
function createTracker(w, d, o) {
  var CLICK = 'tracker_click_id', PROBE = 'tracker_probe';
  var api = {}, debug = !!o.debug, domain = o.cookieDomain == null ? null : o.cookieDomain,
    programId = o.programId, apiHost = o.apiHost || '', lastAff, lastClick;

  function log() {
    if (debug && w.console) try { console.log.apply(console, ['[reftrack]'].concat([].slice.call(arguments))); } catch (e) {}
  }

  function getCookie(name) {
    try {
      var parts = d.cookie.split(/;\s*/);
      for (var i = 0; i < parts.length; i++) {
        var j = parts[i].indexOf('=');
        if (parts[i].slice(0, j) === name) return decodeURIComponent(parts[i].slice(j + 1)) || null;
      }
    } catch (e) {}
    return null;
  }

  function writeCookie(name, value, maxAge, dom) {
    d.cookie = name + '=' + encodeURIComponent(value) + '; Max-Age=' + maxAge + '; Path=/' +
      (dom ? '; Domain=' + dom : '') + '; SameSite=Lax' + (location.protocol === 'https:' ? '; Secure' : '');
  }

  // The broadest domain this browser lets the page set a cookie on, found by trying each
  // suffix of the host name from the shortest up ('' = host-only).
  function cookieDomain() {
    if (domain !== null) return domain;
    var host = location.hostname, labels = host.split('.');
    domain = '';
    if (host === 'localhost' || /^[\d.]+$/.test(host) || host.indexOf(':') >= 0) return domain;
    for (var i = labels.length - 1; i >= 0; i--) {
      var cand = labels.slice(i).join('.'), v = '' + Math.random();
      try {
        writeCookie(PROBE, v, 60, cand);
        if (getCookie(PROBE) === v) {
          writeCookie(PROBE, '', 0, cand);
          return (domain = cand);
        }
      } catch (e) {}
    }
    return domain;
  }

  function setCookie(name, value, days) {
    try {
      writeCookie(name, value, Math.round(days * 86400), cookieDomain());
      if (getCookie(name) !== value) log('cookie not stored:', name);
    } catch (e) { log('cookie error', e); }
  }

  function sessionId() {
    var k = 'tracker_session_id', id;
    try { id = sessionStorage.getItem(k); } catch (e) {}
    if (!id) {
      id = w.crypto && crypto.randomUUID ? crypto.randomUUID() : Date.now().toString(36) + Math.random().toString(36).slice(2);
      try { sessionStorage.setItem(k, id); } catch (e) {}
    }
    return id;
  }

  function failed(error) { return Promise.resolve({ success: false, error: error }); }

  // POSTs JSON to the tracking API; resolves with the response body, never rejects.
  function post(path, body) {
    try {
      return fetch(apiHost + '/api/v1/track/' + path, {
        method: 'POST', keepalive: true, credentials: 'omit',
        headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
      }).then(function (r) {
        return r.json().then(function (j) {
          j = j || {};
          if (!r.ok) j.success = false;
          return j;
        }, function () { return { success: false, error: 'HTTP ' + r.status }; });
      }).then(function (j) {
        log(path, j);
        return j;
      }, function (e) {
        log(path, 'failed', e);
        return { success: false, error: '' + e };
      });
    } catch (e) {
      log(path, 'failed', e);
      return failed('' + e);
    }
  }

  /** The click id stored by the last tracked click, or null. */
  api.getClickId = function () { return getCookie(CLICK); };

  /** Records a signup (browser-mode lead). Resolves with the API's answer; never rejects. */
  api.trackLead = function (lead) {
    lead = lead || {};
    if (!programId) return failed('tracker not configured');
    return post('lead', {
      click_id: api.getClickId() || undefined, customer_key: lead.customer_key, email: lead.email,
      session_id: sessionId(), page_url: location.href, additional_data: { program_id: programId }
    });
  };

  function tz() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) {}
  }

  // A redirect link (/r/<link>) recorded the click already and put its id in rt_click, the
  // program's cookie window in rt_window: keep the id as a click of the tracker's own would
  // be kept, post nothing, and take both out of the address bar, so that a copied URL does
  // not hand this visitor's click id to someone else.
  function keepRedirectClick(url, aff, lastKey) {
    var params = url.searchParams, id = params.get('rt_click'), days = +params.get('rt_window');
    if (!/^cust_\d+_\d+$/.test(id || '')) return false;
    days = days > 0 ? days : 60;
    if (api.getClickId() !== id) {
      setCookie(CLICK, id, days);
      setCookie(lastKey, aff, days);
    }
    log('click recorded by the redirect link', id);
    try {
      params['delete']('rt_click');
      params['delete']('rt_window');
      history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    } catch (e) {}
    return true;
  }

  /** Records the click of the URL's aff. Resolves with the API's answer, or null if none is sent. */
  api.trackClick = function () {
    try {
      if (!programId) return failed('tracker not configured');
      var url = new URL(location.href), aff = url.searchParams.get('aff');
      if (!aff) return Promise.resolve(null);
      // The aff of the last tracked click is kept per program beside the click id: the same
      // link again adds no click; another one does, with the click id to reuse (last touch).
      var existing = api.getClickId(), lastKey = 'tracker_aff_' + programId;
      if (keepRedirectClick(url, aff, lastKey)) return Promise.resolve(null);
      if (existing && getCookie(lastKey) === aff) {
        log('same link, no new click');
        return Promise.resolve(null);
      }
      // The link of this page's last click again, cookie not stored (yet): that click's answer.
      if (aff === lastAff) return lastClick;
      lastAff = aff;
      return (lastClick = post('click', {
        affiliate_url: location.href, page_url: location.href, page_title: d.title,
        referrer_url: d.referrer, session_id: sessionId(), user_agent: navigator.userAgent,
        screen_resolution: screen.width + 'x' + screen.height,
        viewport_size: w.innerWidth + 'x' + w.innerHeight, language: navigator.language,
        timezone: tz(),
        existing_click_id: existing || undefined
      }).then(function (r) {
        if (r.success && r.click_id) {
          var days = r.cookie_window_days > 0 ? r.cookie_window_days : 60;
          setCookie(CLICK, r.click_id, days);
          setCookie(lastKey, aff, days);
        }
        return r;
      }));
    } catch (e) {
      log('click failed', e);
      return failed('' + e);
    }
  };

  api.log = log;
  return api;
}

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

// Reftrack pages: small enhancements on top of pages that work without script.
// - Copy buttons (`data-copy="<element id>"`) copy the element's text and announce it.
// - <time datetime> elements show the day (or, with data-show="minute", the day and the
//   time) in the viewer's time zone.
// - An element with `data-refresh="<seconds>"` and `data-refresh-url` is fetched again
//   from that page every so many seconds and replaced by its new version, until the new
//   version no longer asks for it (a setup checklist that fills in as events arrive).
(function () {
  'use strict';

  function announce(text) {
    var status = document.querySelector('.copy-status');
    if (status) {
      status.textContent = '';
      window.setTimeout(function () { status.textContent = text; }, 50);
    }
  }

  function copy(button) {
    var source = document.getElementById(button.getAttribute('data-copy'));
    if (!source) return;
    var text = source.value || source.textContent;
    var done = function () {
      button.textContent = 'Copied';
      button.classList.add('copied');
      announce('Copied');
      window.setTimeout(function () {
        button.textContent = 'Copy';
        button.classList.remove('copied');
      }, 2000);
    };
    var select = function () {
      if (source.select) {
        source.select();
      } else {
        var range = document.createRange();
        range.selectNodeContents(source);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
      }
      announce('Press Ctrl+C or Cmd+C to copy');
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, select);
    } else {
      select();
    }
  }

  function localTimes(root) {
    var times = root.querySelectorAll('time[datetime]');
    for (var i = 0; i < times.length; i++) {
      var value = times[i].getAttribute('datetime');
      if (value.length <= 10) continue;
      var date = new Date(value);
      if (isNaN(date.getTime())) continue;
      times[i].title = value;
      var options = { year: 'numeric', month: 'short', day: 'numeric' };
      if (times[i].getAttribute('data-show') === 'minute') {
        options.hour = '2-digit';
        options.minute = '2-digit';
      }
      times[i].textContent = date.toLocaleString(undefined, options);
    }
  }

  // The refreshing element, its timer and the fetch under way.
  var refresh = { timer: null, pending: null, stopped: false };

  function scheduleRefresh() {
    var el = document.querySelector('[data-refresh][data-refresh-url]');
    if (!el || refresh.stopped) return;
    var seconds = Math.max(1, parseInt(el.getAttribute('data-refresh'), 10) || 5);
    refresh.timer = window.setTimeout(function () {
      refresh.timer = null;
      refresh.pending = fetch(el.getAttribute('data-refresh-url'), {
        credentials: 'same-origin',
        headers: { Accept: 'text/html' },
      }).then(function (response) {
        // Signed out, or the page is gone: leave the page as it is.
        if (!response.ok || response.redirected) return null;
        return response.text();
      }).then(function (html) {
        refresh.pending = null;
        if (html === null || refresh.stopped) return;
        var fresh = new DOMParser().parseFromString(html, 'text/html').getElementById(el.id);
        if (!fresh) return;
        var node = document.importNode(fresh, true);
        el.replaceWith(node);
        localTimes(node);
        scheduleRefresh();
      }, function () {
        refresh.pending = null;
      });
    }, seconds * 1000);
  }

  // Stops refreshing and settles once no fetch is under way (tests call it before they
  // leave a page, so that no request is cut off).
  window.reftrackStopRefresh = function () {
    refresh.stopped = true;
    if (refresh.timer) window.clearTimeout(refresh.timer);
    return Promise.resolve(refresh.pending).then(function () {}, function () {});
  };

  function start() {
    var buttons = document.querySelectorAll('button[data-copy]');
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].hidden = false;
      buttons[i].addEventListener('click', function (e) { copy(e.currentTarget); });
    }
    var shares = document.querySelectorAll('input.share-text');
    for (var j = 0; j < shares.length; j++) {
      shares[j].addEventListener('focus', function (e) { e.currentTarget.select(); });
    }
    localTimes(document);
    scheduleRefresh();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();

// Reftrack pages: small enhancements on top of pages that work without script.
// - Copy buttons (`data-copy="<input id>"`) copy the input's text and announce it.
// - <time datetime> elements show the day in the viewer's time zone.
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
      announce('Copied ' + text);
      window.setTimeout(function () {
        button.textContent = 'Copy';
        button.classList.remove('copied');
      }, 2000);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, function () {
        source.select();
        announce('Press Ctrl+C or Cmd+C to copy');
      });
    } else {
      source.select();
      announce('Press Ctrl+C or Cmd+C to copy');
    }
  }

  function localDays() {
    var times = document.querySelectorAll('time[datetime]');
    for (var i = 0; i < times.length; i++) {
      var value = times[i].getAttribute('datetime');
      if (value.length <= 10) continue;
      var date = new Date(value);
      if (isNaN(date.getTime())) continue;
      times[i].title = value;
      times[i].textContent = date.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
    }
  }

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
    localDays();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();

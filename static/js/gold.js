// The adjudication page: the keyboard, as on the annotator's page. The
// page works without it (radio buttons and plain form posts); this script
// adds the keys, the current rubric item and accepting the consensus with
// one key.
(function () {
  "use strict";

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  var root = $("#adjudicate");
  if (!root) { return; }
  var form = $("#gold-form", root);
  var items = $$(".ritem", form);
  var why = $("#adj-why", root);
  var answered = $("[data-answered]", root);
  var save = $("[data-testid=save-gold]", root);
  var index = 0;
  var busy = false;

  function say(text) { answered.textContent = text; }
  function answeredIn(fs) { return !!$("input[type=radio]:checked", fs); }

  function firstUnanswered() {
    for (var i = 0; i < items.length; i++) {
      if (!answeredIn(items[i])) { return i; }
    }
    return -1;
  }

  function count() {
    say(items.filter(answeredIn).length + " of " + items.length + " have gold");
  }

  // setCurrent makes item i the current one; with focus, its answer takes
  // the keyboard and, unless stay, the item scrolls into view.
  function setCurrent(i, focus, stay) {
    if (i < 0 || i >= items.length) { return; }
    items.forEach(function (fs, j) { fs.classList.toggle("current", j === i); });
    index = i;
    if (focus) {
      var input = $("input[type=radio]:checked", items[i]) || $("input[type=radio]:not(:disabled)", items[i]);
      if (input) { input.focus({ preventScroll: true }); }
      if (!stay) { items[i].scrollIntoView({ block: "nearest" }); }
    }
  }

  // choose sets the current item's gold for a shortcut key and moves on.
  function choose(key) {
    var fs = items[index];
    if (!fs) { return false; }
    var input = $("input[type=radio][data-key='" + key + "']", fs);
    if (!input) {
      if (key === "A" && $("input[type=radio][data-key=Y]", fs)) {
        say("NA is not an answer " + fs.dataset.key + " allows.");
        return true;
      }
      return false;
    }
    if (input.disabled) {
      // Forbidden for this dialogue: the key is spent and nothing chosen.
      var why = document.getElementById(input.getAttribute("aria-describedby") || "");
      say(why ? why.textContent : input.value + " is not offered here.");
      return true;
    }
    input.checked = true;
    count();
    if (index < items.length - 1) {
      setCurrent(index + 1, true);
    } else {
      var gap = firstUnanswered();
      if (gap >= 0) { setCurrent(gap, true); } else { save.focus(); }
    }
    return true;
  }

  // submit saves once every rubric item has gold and any warning is
  // confirmed; otherwise it says what is missing.
  function submit() {
    if (busy) { return; }
    var gap = firstUnanswered();
    if (gap >= 0) {
      var missing = items.filter(function (fs) { return !answeredIn(fs); }).map(function (fs) { return fs.dataset.key; });
      say("Set the gold of " + missing.join(", ") + " first.");
      setCurrent(gap, true);
      return;
    }
    var confirm = $("[data-testid=confirm]", root);
    if (confirm && !confirm.checked) {
      say("Tick the box to confirm the warnings, or change the gold.");
      confirm.focus();
      return;
    }
    busy = true;
    form.requestSubmit(save);
  }

  // acceptConsensus sets every rubric item that has a consensus to it, then
  // saves when nothing is left to decide.
  function acceptConsensus() {
    var n = 0;
    items.forEach(function (fs) {
      var v = fs.dataset.consensus;
      if (!v) { return; }
      var input = $$("input[type=radio]", fs).filter(function (r) { return r.value === v; })[0];
      if (input) { input.checked = true; n++; }
    });
    count();
    if (n === 0) {
      say("No rubric item has a consensus: set the gold yourself.");
      return;
    }
    if (firstUnanswered() >= 0) {
      setCurrent(firstUnanswered(), true);
      say("Took the consensus where there is one; set the gold of the rest.");
      return;
    }
    submit();
  }

  function toggleHelp() {
    var d = $("#shortcuts");
    if (d.open) { d.close(); } else { d.showModal(); }
  }

  function onKey(e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) { return; }
    var t = e.target;
    var help = $("#shortcuts");
    var typing = t.tagName === "TEXTAREA" || t.tagName === "SELECT" || (t.tagName === "INPUT" && /^(text|number|search)$/.test(t.type));
    if (e.key === "Escape") {
      if (help && help.open) { return; }
      if (typing) { t.blur(); setCurrent(index, true); e.preventDefault(); }
      return;
    }
    if (typing) { return; }
    if (help && help.open) {
      if (e.key === "?") { toggleHelp(); e.preventDefault(); }
      return;
    }
    if (t.id === "messages" && /^(ArrowUp|ArrowDown|PageUp|PageDown|Home|End| )$/.test(e.key)) { return; }
    var onControl = t.tagName === "BUTTON" || t.tagName === "A" || t.tagName === "SUMMARY";
    var handled = true;
    switch (e.key) {
      case "ArrowDown": case "j": case "J":
        setCurrent(Math.min(index + 1, items.length - 1), true); break;
      case "ArrowUp": case "k": case "K":
        setCurrent(Math.max(index - 1, 0), true); break;
      case "Enter":
        if (e.shiftKey) { acceptConsensus(); } else if (onControl) { handled = false; } else { submit(); }
        break;
      case "c": case "C":
        acceptConsensus(); break;
      case "r": case "R":
        $("#gold-note").focus(); break;
      case "w": case "W":
        // The switch shows or hides every row's rationales, definition and
        // raw replies; the current row stays in view.
        if (why) { why.checked = !why.checked; items[index] && items[index].scrollIntoView({ block: "nearest" }); } else { handled = false; }
        break;
      case "e": case "E":
        var ex = $("details.examples", items[index]);
        if (ex) {
          ex.open = !ex.open;
          if (ex.open && why) { why.checked = true; }
        } else { handled = false; }
        break;
      case "ArrowRight": case "]":
        var next = $("[data-nav=next]", root);
        if (next) { window.location.assign(next.href); } else { say("No other disagreement waits."); }
        break;
      case "?":
        toggleHelp(); break;
      default:
        handled = e.key.length === 1 && choose(e.key.toUpperCase());
    }
    if (handled) {
      e.preventDefault();
      swallow = e.key;
    }
  }

  // swallow is a key onKey handled: a keypress that still follows it must
  // not type into the note that key just focused.
  var swallow = null;

  document.addEventListener("keydown", onKey);
  document.addEventListener("keypress", function (e) {
    var t = e.target;
    if (swallow !== null && e.key === swallow) { e.preventDefault(); }
    // Enter on a radio would submit the form by itself; onKey decides.
    else if (e.key === "Enter" && t.form === form && (t.type === "radio" || t.type === "checkbox")) { e.preventDefault(); }
    swallow = null;
  }, true);
  document.addEventListener("keyup", function () { swallow = null; }, true);
  form.addEventListener("change", count);
  form.addEventListener("focusin", function (e) {
    var fs = e.target.closest && e.target.closest(".ritem");
    if (fs) { setCurrent(items.indexOf(fs), false); }
  });
  form.addEventListener("submit", function () { busy = true; });

  var helpButton = $("[data-action=shortcuts]", root);
  helpButton.hidden = false;
  helpButton.addEventListener("click", toggleHelp);

  count();
  var problems = $("[data-testid=problems]", root);
  var bad = $(".ritem.has-error", form);
  var first = firstUnanswered();
  // The page opens at the top, on the raters' answers; the keyboard is
  // already on the first item still without gold.
  setCurrent(bad ? items.indexOf(bad) : (first < 0 ? 0 : first), !problems, true);
  if (problems) { ($("[data-testid=confirm]", root) || problems).focus(); }
  var rated = $("#rated", root);
  var pane = $("#messages", root);
  if (rated && pane) { pane.scrollTop += rated.getBoundingClientRect().top - pane.getBoundingClientRect().top - 12; }
})();

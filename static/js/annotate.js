// The annotator's workspace: keyboard shortcuts, drafts that autosave,
// active time, the content note, and the turns a failing answer names. Everything here improves a page that
// works without it (radio buttons and plain form posts); htmx swaps the
// next item in after a submit, and this script sets up each one it swaps.
(function () {
  "use strict";

  var IDLE_MS = 60 * 1000; // no input for this long: the person is away
  var SAVE_DELAY_MS = 800; // autosave after typing pauses this long
  var TIME_SAVE_MS = 30 * 1000; // save the active time this often
  var LOCAL_DAYS = 14; // browser copies of drafts older than this are dropped

  var cur = null; // the workspace on screen
  var lastInput = Date.now();
  var lastTick = Date.now();

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  function store(kind) {
    try { return kind === "session" ? window.sessionStorage : window.localStorage; } catch (e) { return null; }
  }

  // ---- Setting up a workspace ----------------------------------------------

  function setup(root) {
    var ws = root.id === "workspace" ? root : $("#workspace", root);
    if (!ws) { return; }
    $$("details[data-remember]", ws).forEach(rememberOpen);
    if (!ws.dataset.item) { cur = null; return; } // the end of the queue
    var form = $("#label-form", ws);
    var st = {
      ws: ws,
      form: form,
      item: ws.dataset.item,
      owner: ws.dataset.owner,
      base: ws.dataset.base,
      draftURL: ws.dataset.draftUrl,
      draftAt: Number(ws.dataset.draftAt) || 0,
      items: $$("fieldset.ritem", ws),
      index: 0,
      active: Number(form.elements.active_ms.value) || 0,
      savedActive: Number(form.elements.active_ms.value) || 0,
      saveTimer: 0,
      busy: false,
      gone: false,
      evidence: ws.dataset.evidence || "off",
      marks: null,
      status: $("[data-testid=draft-status]", ws),
      answered: $("[data-answered]", ws)
    };
    cur = st;
    lastTick = Date.now();
    form.elements.clock.value = "js";
    var help = $("[data-action=shortcuts]", ws);
    if (help) {
      help.hidden = false;
      help.addEventListener("click", toggleHelp);
    }
    // After a refused submit the form holds what was posted: nothing to
    // restore.
    if (!$("[data-testid=problems]", ws)) { restoreLocal(st); }
    form.addEventListener("change", function (e) { changed(st, e); });
    form.addEventListener("input", function (e) { if (e.target.tagName === "TEXTAREA" || isTurns(e.target)) { changed(st, e); } });
    form.addEventListener("focusin", function (e) {
      var fs = e.target.closest && e.target.closest("fieldset.ritem");
      if (fs) { setCurrent(st, st.items.indexOf(fs), false); }
    });
    // A click on a criterion's text, or on its Definition link, makes it
    // the one in hand, which opens it; the link's own jump is not needed.
    form.addEventListener("click", function (e) {
      var fs = e.target.closest && e.target.closest("fieldset.ritem");
      if (!fs) { return; }
      var more = e.target.closest("[data-action=more]");
      if (more) { e.preventDefault(); }
      if (more || (fs !== st.items[st.index] && !e.target.closest("label, input, textarea, summary, a"))) {
        setCurrent(st, st.items.indexOf(fs), false);
        focusItem(st, true);
      }
    });
    // A content note hides the dialogue and locks the answers until the
    // person opens it; the server records the opening, so the page comes
    // without the note afterwards.
    var reveal = $("[data-action=reveal-form]", ws);
    st.hidden = !!reveal;
    if (reveal) {
      reveal.addEventListener("submit", function (e) { e.preventDefault(); openNote(st, reveal); });
    }
    countAnswered(st);
    st.items.forEach(function (fs) { syncEvidence(st, fs, false); });
    setupMarks(st);
    var first = firstUnanswered(st);
    // On load nothing has moved under the reader: the pane stays at its
    // top, title in view, though the category's notes open above the item.
    setCurrent(st, first < 0 ? 0 : first, false, true);
    if (st.hidden) {
      $("[data-action=reveal]", ws).focus();
      return;
    }
    showRated(st);
    focusAfterLoad(st);
  }

  // focusAfterLoad puts the keyboard where the person continues: the
  // engine's problems after a refused submit, else the current item.
  function focusAfterLoad(st) {
    var confirm = $("[data-testid=confirm]", st.ws);
    var problems = $("[data-testid=problems]", st.ws);
    if (problems) {
      var bad = $("fieldset.ritem.has-error", st.ws);
      if (bad) { setCurrent(st, st.items.indexOf(bad), false); }
      (confirm || problems).focus({ preventScroll: !confirm });
      return;
    }
    // A fresh item starts at the top of the rubric; a resumed one at the
    // first item still to answer.
    focusItem(st, st.index === 0);
  }

  // openNote records on the server that the person opened the content
  // note, and shows the dialogue once it is recorded: answers to a dialogue
  // whose note was not opened are refused.
  function openNote(st, form) {
    if (st.opening) { return; }
    st.opening = true;
    fetch(form.action, { method: "POST", credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (res) {
        st.opening = false;
        if (res.ok) { revealDialogue(st); } else { noteError(st, "Could not open it: the server answered " + res.status + ". Try again, or reload the page."); }
      })
      .catch(function () {
        st.opening = false;
        noteError(st, "No connection to attune. Try again in a moment.");
      });
  }

  function noteError(st, text) {
    var note = $("#content-note", st.ws);
    if (!note) { return; }
    var box = $("[data-testid=note-error]", note);
    if (!box) {
      box = document.createElement("p");
      box.className = "field-error";
      box.setAttribute("role", "alert");
      box.dataset.testid = "note-error";
      note.appendChild(box);
    }
    box.textContent = text;
  }

  function revealDialogue(st) {
    var note = $("#content-note", st.ws);
    if (note) { note.remove(); }
    $("#messages", st.ws).hidden = false;
    $$("fieldset.answers", st.ws).forEach(function (f) { f.disabled = false; });
    $$("[data-testid=answers-locked]", st.ws).forEach(function (p) { p.remove(); });
    $("[data-testid=submit]", st.ws).disabled = false;
    st.hidden = false;
    showRated(st);
    focusItem(st);
  }

  // showRated scrolls the dialogue's own pane to the reply under
  // evaluation, or to the start of a conversation.
  function showRated(st) {
    var pane = $("#messages", st.ws);
    var rated = $("#rated", st.ws);
    if (!pane || pane.hidden) { return; }
    if (!rated) { pane.scrollTop = 0; return; }
    pane.scrollTop += rated.getBoundingClientRect().top - pane.getBoundingClientRect().top - 12;
  }

  // rememberOpen keeps a <details> open or closed across items and visits.
  function rememberOpen(d) {
    var ls = store("local");
    if (!ls) { return; }
    var key = "attune:open:" + d.dataset.remember;
    var saved = ls.getItem(key);
    if (saved !== null) { d.open = saved === "1"; }
    d.addEventListener("toggle", function () { ls.setItem(key, d.open ? "1" : "0"); });
  }

  // ---- The current rubric item ---------------------------------------------

  // setCurrent makes item i the one in hand. The compact rubric opens it
  // and closes the one before, which moves what follows: unless the focus
  // and the scroll go to the item anyway, it is kept where it was on the
  // screen, so that what the pointer is over stays under it.
  function setCurrent(st, i, focus, onLoad) {
    if (i < 0 || i >= st.items.length) { return; }
    var fs = st.items[i];
    var top = fs.getBoundingClientRect().top;
    st.items.forEach(function (f, j) { f.classList.toggle("current", j === i); });
    st.index = i;
    refreshMarks(st);
    if (focus) { focusItem(st); } else if (!onLoad) { keepPlace(st, fs, top); }
  }

  function keepPlace(st, fs, top) {
    var shift = fs.getBoundingClientRect().top - top;
    if (Math.abs(shift) < 1) { return; }
    var sc = $("#rubric-scroll", st.ws);
    if (sc && sc.scrollHeight > sc.clientHeight && getComputedStyle(sc).overflowY !== "visible") {
      sc.scrollTop += shift;
    } else {
      window.scrollBy(0, shift);
    }
  }

  // focusItem puts the focus on the current item's answer and, unless
  // told to stay, scrolls the item's heading to the top: the definition
  // and the levels are read from there down.
  function focusItem(st, stay) {
    var fs = st.items[st.index];
    if (!fs) { return; }
    var input = $("input[type=radio]:checked", fs) || $("input[type=radio]:not(:disabled)", fs);
    if (input) { input.focus({ preventScroll: true }); }
    if (!stay) { fs.scrollIntoView({ block: "start" }); }
  }

  function answeredIn(fs) { return !!$("input[type=radio]:checked", fs); }

  function firstUnanswered(st) {
    for (var i = 0; i < st.items.length; i++) {
      if (!answeredIn(st.items[i])) { return i; }
    }
    return -1;
  }

  function countAnswered(st) {
    var n = st.items.filter(answeredIn).length;
    st.answered.textContent = n + " of " + st.items.length + " answered";
    return n;
  }

  function say(st, text) { st.answered.textContent = text; }

  // forbiddenWhy is the reason a disabled answer gives, from the text its
  // description points at.
  function forbiddenWhy(input) {
    var why = document.getElementById(input.getAttribute("aria-describedby") || "");
    return why ? why.textContent : input.value + " is not offered here.";
  }

  // answer chooses the current item's answer for a shortcut key and moves
  // on: to the next item, or to the submit button after the last.
  function answer(st, key) {
    var fs = st.items[st.index];
    if (!fs) { return false; }
    var input = $("input[type=radio][data-key='" + key + "']", fs);
    if (!input) {
      var values = $$("input[type=radio]", fs).map(function (r) { return r.dataset.key; }).filter(Boolean);
      if (key === "A" && values.indexOf("Y") >= 0) {
        say(st, "NA is not offered for " + fs.dataset.key + ".");
        return true;
      }
      return false;
    }
    if (input.disabled) {
      // Forbidden for this dialogue: the key is spent, nothing chosen,
      // and the reason said where the count is read out.
      say(st, forbiddenWhy(input));
      return true;
    }
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    // Where the project requires the turns of a failing answer, they are
    // asked for at once: the field takes the focus, and Enter goes on.
    var turns = turnsInput(fs);
    if (turns && st.evidence === "required" && input.hasAttribute("data-fails")) {
      turns.focus();
      say(st, "Type the turns where " + fs.dataset.key + " fails, such as 2, 5, then press Enter.");
      return true;
    }
    moveOn(st);
    return true;
  }

  // moveOn goes from the current item to the next, or after the last to
  // the first still unanswered, or to the submit button.
  function moveOn(st) {
    if (st.index < st.items.length - 1) {
      setCurrent(st, st.index + 1, true);
    } else {
      var gap = firstUnanswered(st);
      if (gap >= 0) { setCurrent(st, gap, true); } else { $("[data-testid=submit]", st.ws).focus(); }
    }
  }

  // ---- Turn evidence --------------------------------------------------------
  // A failing answer may name the turns where the item fails: the server
  // marks which answers fail (data-fails, from the rubric's rule) and
  // decides whether the turns given are right. Here the turns are typed in
  // the item's field, or marked with a button on the dialogue's messages
  // for the item in hand; the messages say which criteria marked them.

  function isTurns(el) { return !!(el && el.dataset && el.dataset.field === "evidence"); }

  function turnsInput(fs) { return fs ? $("input[data-field=evidence]", fs) : null; }

  function failing(fs) {
    var r = $("input[type=radio]:checked", fs);
    return !!(r && r.hasAttribute("data-fails"));
  }

  // turnsOf reads the whole numbers typed in a turns field, once each.
  function turnsOf(input) {
    var out = [];
    input.value.split(/[\s,;]+/).forEach(function (w) {
      if (/^\d+$/.test(w) && out.indexOf(Number(w)) < 0) { out.push(Number(w)); }
    });
    return out;
  }

  // syncEvidence shows an item's turns field with a failing answer, or
  // while it holds turns (after a refusal, so that they can be seen and
  // put right); with clear, an answer that takes no turns empties it.
  function syncEvidence(st, fs, clear) {
    var input = turnsInput(fs);
    if (!input) { return; }
    var fails = failing(fs);
    if (!fails && clear && input.value.trim() !== "") {
      input.value = "";
      say(st, "Cleared the turns marked for " + fs.dataset.key + ": only a failing answer names turns.");
    }
    input.closest("[data-evidence]").hidden = !fails && input.value.trim() === "";
  }

  // setupMarks puts a button on each numbered message of the dialogue that
  // marks its turn for the item in hand, and a tag that names the items
  // that marked it.
  function setupMarks(st) {
    if (st.evidence === "off" || !$("input[data-field=evidence]", st.ws)) { return; }
    st.marks = [];
    $$("#messages li[data-turn]", st.ws).forEach(function (li) {
      var who = $(".msg-who", li);
      var turn = Number(li.dataset.turn);
      var b = document.createElement("button");
      b.type = "button";
      b.className = "turn-mark";
      b.dataset.testid = "turn-mark";
      b.dataset.turn = String(turn);
      b.hidden = true;
      b.addEventListener("click", function () { toggleTurn(st, turn); });
      var tags = document.createElement("span");
      tags.className = "turn-tags";
      tags.dataset.testid = "turn-tags";
      tags.hidden = true;
      who.appendChild(tags);
      who.appendChild(b);
      st.marks.push({ li: li, turn: turn, button: b, tags: tags });
    });
    $$("[data-js-help]", st.ws).forEach(function (s) { s.hidden = false; });
    refreshMarks(st);
  }

  // refreshMarks shows the marks of every item on the dialogue, and the
  // buttons while the item in hand has a failing answer.
  function refreshMarks(st) {
    if (!st.marks) { return; }
    var fs = st.items[st.index];
    var input = turnsInput(fs);
    var active = input && failing(fs);
    var mine = active ? turnsOf(input) : [];
    var byTurn = {};
    st.items.forEach(function (f) {
      var i = turnsInput(f);
      if (!i) { return; }
      turnsOf(i).forEach(function (t) { (byTurn[t] = byTurn[t] || []).push(f.dataset.key); });
    });
    st.marks.forEach(function (m) {
      var on = mine.indexOf(m.turn) >= 0;
      m.button.hidden = !active;
      if (active) {
        m.button.textContent = "Mark turn " + m.turn + " for " + fs.dataset.key;
        m.button.setAttribute("aria-pressed", on ? "true" : "false");
      }
      var keys = byTurn[m.turn] || [];
      m.tags.hidden = keys.length === 0;
      m.tags.textContent = keys.length ? "Fails here: " + keys.join(", ") : "";
      m.li.classList.toggle("marked", keys.length > 0);
      m.li.classList.toggle("marked-current", on);
    });
  }

  // toggleTurn marks turn for the item in hand, or takes the mark off.
  function toggleTurn(st, turn) {
    var fs = st.items[st.index];
    var input = turnsInput(fs);
    if (!input || !failing(fs)) { return; }
    var turns = turnsOf(input);
    var at = turns.indexOf(turn);
    if (at >= 0) { turns.splice(at, 1); } else { turns.push(turn); }
    turns.sort(function (a, b) { return a - b; });
    input.value = turns.join(", ");
    input.dispatchEvent(new Event("input", { bubbles: true }));
    say(st, (at >= 0 ? "Unmarked turn " : "Marked turn ") + turn + " for " + fs.dataset.key +
      (turns.length ? "; its turns: " + turns.join(", ") + "." : "; no turns marked."));
  }

  // focusTurns puts the focus in the current item's turns field (T).
  function focusTurns(st) {
    var fs = st.items[st.index];
    var input = turnsInput(fs);
    if (!input) { return false; }
    if (input.closest("[data-evidence]").hidden) {
      var on = $$("input[type=radio][data-fails]", fs).map(function (r) { return r.value; });
      say(st, fs.dataset.key + " names turns only with a failing answer (" + on.join(", ") + ").");
      return true;
    }
    input.focus();
    return true;
  }

  function submit(st) {
    if (st.busy || st.hidden) { return; }
    var gap = firstUnanswered(st);
    if (gap >= 0) {
      var missing = st.items.filter(function (fs) { return !answeredIn(fs); }).map(function (fs) { return fs.dataset.key; });
      say(st, "Answer " + missing.join(", ") + " first.");
      setCurrent(st, gap, true);
      return;
    }
    var confirm = $("[data-testid=confirm]", st.ws);
    if (confirm && !confirm.checked) {
      say(st, "Tick the box to confirm the warnings, or change the answers.");
      confirm.focus();
      return;
    }
    st.form.requestSubmit();
  }

  // ---- Drafts ---------------------------------------------------------------

  function localKey(st) { return "attune:draft:" + st.owner + ":" + st.item; }

  function fields(st) {
    var out = [];
    new FormData(st.form).forEach(function (v, k) {
      if (k.indexOf("answer.") === 0 || k.indexOf("rationale") === 0 || k.indexOf("evidence.") === 0) { out.push([k, String(v)]); }
    });
    return out;
  }

  // saveLocal keeps a copy in the browser at once: it survives a lost
  // connection and the moments before an autosave reaches the server.
  function saveLocal(st) {
    var ls = store("local");
    if (!ls || st.gone) { return; }
    try {
      ls.setItem(localKey(st), JSON.stringify({ t: Date.now(), base: st.base, active: st.active, fields: fields(st) }));
    } catch (e) { /* storage full: the server copy still counts */ }
  }

  // restoreLocal applies the browser's copy when it is newer than the
  // server's draft (the last change did not reach the server).
  function restoreLocal(st) {
    var ls = store("local");
    if (!ls) { return; }
    var cutoff = Date.now() - LOCAL_DAYS * 864e5;
    for (var i = ls.length - 1; i >= 0; i--) {
      var k = ls.key(i);
      if (k && k.indexOf("attune:draft:") === 0) {
        try { if (JSON.parse(ls.getItem(k)).t < cutoff) { ls.removeItem(k); } } catch (e) { ls.removeItem(k); }
      }
    }
    var raw = ls.getItem(localKey(st));
    if (!raw) { return; }
    var d;
    try { d = JSON.parse(raw); } catch (e) { return; }
    if (d.base !== st.base || d.t <= st.draftAt) { return; }
    var f = st.form;
    var before = JSON.stringify(fields(st));
    $$("input[type=radio][name^='answer.']", f).forEach(function (r) { r.checked = false; });
    $$("textarea[name^='rationale']", f).forEach(function (t) { t.value = ""; });
    $$("input[data-field=evidence]", f).forEach(function (t) { t.value = ""; });
    d.fields.forEach(function (kv) {
      if (kv[0].indexOf("answer.") === 0) {
        var r = $$("input[type=radio]", f).filter(function (x) { return x.name === kv[0] && x.value === kv[1]; })[0];
        if (r) { r.checked = true; }
      } else {
        var t = f.elements[kv[0]];
        if (t) {
          t.value = kv[1];
          var det = t.closest("details");
          if (det && kv[1]) { det.open = true; }
        }
      }
    });
    st.active = Math.max(st.active, d.active || 0);
    f.elements.active_ms.value = String(st.active);
    // Say so only when the copy brought back an answer or a note the page
    // did not already show: a copy that only kept the time restores
    // nothing the person would miss.
    var after = fields(st);
    var some = after.some(function (kv) { return kv[1] !== ""; });
    if (some && JSON.stringify(after) !== before) {
      st.status.textContent = "Restored your unsaved answers.";
    }
    scheduleSave(st);
  }

  function dropLocal(owner, item) {
    var ls = store("local");
    if (ls) { ls.removeItem("attune:draft:" + owner + ":" + item); }
  }

  function changed(st, e) {
    var t = e && e.target;
    if (t && t.type === "radio") {
      countAnswered(st);
      var fs = t.closest("fieldset.ritem");
      if (fs) { syncEvidence(st, fs, true); }
    }
    if (t && (t.type === "radio" || isTurns(t))) { refreshMarks(st); }
    saveLocal(st);
    scheduleSave(st);
  }

  function scheduleSave(st) {
    if (st.gone) { return; }
    clearTimeout(st.saveTimer);
    st.saveTimer = setTimeout(function () { saveDraft(st); }, SAVE_DELAY_MS);
  }

  function draftBody(st) {
    st.form.elements.active_ms.value = String(st.active);
    return new URLSearchParams(new FormData(st.form));
  }

  function saveDraft(st) {
    clearTimeout(st.saveTimer);
    if (st.busy || st.gone || cur !== st) { return; }
    var sent = st.active;
    st.status.textContent = "Saving…";
    fetch(st.draftURL, { method: "POST", body: draftBody(st), credentials: "same-origin", keepalive: true })
      .then(function (res) {
        if (res.status === 204) {
          st.savedActive = sent;
          st.status.textContent = "Draft saved " + new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
        } else if (res.status === 409) {
          // The answers were stored or the item skipped meanwhile.
          st.gone = true;
          st.status.textContent = "";
        } else {
          st.status.textContent = "Draft not saved (" + res.status + "); it is kept in this browser.";
        }
      })
      .catch(function () {
        st.status.textContent = "Offline: your answers are kept in this browser.";
      });
  }

  // flush sends what is unsaved as the page goes away.
  function flush() {
    var st = cur;
    if (!st || st.busy || st.gone) { return; }
    if (!st.saveTimer && st.active === st.savedActive) { return; }
    clearTimeout(st.saveTimer);
    st.saveTimer = 0;
    saveLocal(st);
    if (navigator.sendBeacon && navigator.sendBeacon(st.draftURL, draftBody(st))) {
      st.savedActive = st.active;
    }
  }

  // ---- Active time ------------------------------------------------------------

  function tick() {
    var now = Date.now();
    var st = cur;
    if (st && document.visibilityState === "visible" && now - lastInput < IDLE_MS) {
      st.active += now - lastTick;
      st.form.elements.active_ms.value = String(st.active);
      if (st.active - st.savedActive >= TIME_SAVE_MS && !st.busy) { saveLocal(st); saveDraft(st); }
    }
    lastTick = now;
  }

  function sawInput() { lastInput = Date.now(); }

  // ---- Keys -----------------------------------------------------------------

  function toggleHelp() {
    var d = $("#shortcuts");
    if (!d) { return; }
    if (d.open) { d.close(); } else { d.showModal(); }
  }

  function openSkip(st, flag) {
    var d = $("details.skip", st.ws);
    if (!d) { return; }
    d.open = true;
    var target = flag ? $("input[name=flag]:not([value=''])", d) : $("[data-testid=skip-submit]", d);
    if (target) { target.focus(); }
  }

  function go(st, rel) {
    var a = $("[data-nav=" + rel + "]", st.ws);
    if (!a) { return; }
    flush();
    window.location.assign(a.href);
  }

  function onKey(e) {
    var st = cur;
    if (!st || !document.body.contains(st.ws) || e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) { return; }
    var t = e.target;
    var help = $("#shortcuts");
    var skip = $("details.skip", st.ws);
    var typing = t.tagName === "TEXTAREA" || t.tagName === "SELECT" || (t.tagName === "INPUT" && /^(text|email|password|search|number)$/.test(t.type));

    // Enter in a turns field is done with the item: on to the next. The
    // form is sent with the submit button or Enter elsewhere.
    if (e.key === "Enter" && isTurns(t)) { moveOn(st); e.preventDefault(); return; }
    if (e.key === "Escape") {
      if (help && help.open) { return; } // the dialog closes itself
      if (t.id === "messages") { focusItem(st); e.preventDefault(); return; }
      if (skip && skip.open && skip.contains(t)) { skip.open = false; focusItem(st); e.preventDefault(); return; }
      if (typing) { t.blur(); focusItem(st); e.preventDefault(); }
      return;
    }
    if (typing) { return; }
    if (help && help.open) {
      if (e.key === "?") { toggleHelp(); e.preventDefault(); }
      return;
    }
    if (skip && skip.contains(t)) { return; } // its own radios and button
    // Behind a content note nothing is answered or submitted: only skip,
    // flag, the shortcut list and one's own labels are in reach. Enter on
    // Show the conversation does what a button does.
    if (st.hidden && !/^(s|S|f|F|\?|ArrowLeft|ArrowRight|\[|\])$/.test(e.key)) { return; }
    if (t.id === "messages" && /^(ArrowUp|ArrowDown|PageUp|PageDown|Home|End| )$/.test(e.key)) { return; }
    var onControl = t.tagName === "BUTTON" || t.tagName === "A" || t.tagName === "SUMMARY";

    var handled = true;
    switch (e.key) {
      case "ArrowDown": case "j": case "J":
        setCurrent(st, Math.min(st.index + 1, st.items.length - 1), true); break;
      case "ArrowUp": case "k": case "K":
        setCurrent(st, Math.max(st.index - 1, 0), true); break;
      case "ArrowLeft": case "[":
        go(st, "prev"); break;
      case "ArrowRight": case "]":
        go(st, "next"); break;
      case "Enter":
        if (onControl) { handled = false; } else { submit(st); }
        break;
      case "s": case "S":
        openSkip(st, false); break;
      case "f": case "F":
        openSkip(st, true); break;
      case "?":
        toggleHelp(); break;
      case "d": case "D":
        // The dialogue's own pane scrolls by keyboard once it has focus.
        var msgs = $("#messages", st.ws);
        if (msgs && !msgs.hidden) { msgs.focus(); } else { handled = false; }
        break;
      case "e": case "E":
        var ex = $("details.examples", st.items[st.index]);
        if (ex) { ex.open = !ex.open; } else { handled = false; }
        break;
      case "r": case "R":
        var note = $("details.note", st.items[st.index]);
        if (note) { note.open = true; $("textarea", note).focus(); }
        break;
      case "t": case "T":
        handled = focusTurns(st);
        break;
      default:
        handled = e.key.length === 1 && answer(st, e.key.toUpperCase());
    }
    if (handled) {
      e.preventDefault();
      swallow = e.key;
    }
  }

  // swallow is a key onKey handled: a keypress that still follows it (some
  // input paths send one even when keydown was cancelled) must not type
  // into the note that key just opened.
  var swallow = null;

  // ---- htmx -----------------------------------------------------------------

  function isLabelForm(elt) { return elt && (elt.id === "label-form" || (elt.closest && elt.closest("details.skip, #content-note, .resubmitted"))); }

  document.addEventListener("htmx:beforeRequest", function (e) {
    var st = cur;
    if (st && isLabelForm(e.detail.elt)) {
      st.busy = true;
      clearTimeout(st.saveTimer);
      e.detail.elt.dataset.owner = st.owner;
      e.detail.elt.dataset.item = st.item;
    }
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    var elt = e.detail.elt;
    if (!isLabelForm(elt)) { return; }
    var status = e.detail.xhr ? e.detail.xhr.status : 0;
    if (status >= 200 && status < 300) {
      // Stored or skipped: the browser's copy has done its job.
      dropLocal(elt.dataset.owner, elt.dataset.item);
    }
  });
  function failed(e, text) {
    var st = cur;
    if (!st || !isLabelForm(e.detail.elt)) { return; }
    st.busy = false;
    var box = $("[data-testid=submit-error]", st.ws);
    if (!box) {
      box = document.createElement("p");
      box.className = "flash error ws-error";
      box.setAttribute("role", "alert");
      box.dataset.testid = "submit-error";
      st.ws.insertBefore(box, $(".ws-panes", st.ws));
    }
    box.textContent = text;
  }
  document.addEventListener("htmx:responseError", function (e) {
    failed(e, "Could not do that: the server answered " + e.detail.xhr.status + ". Your answers are kept; try again, or reload the page.");
  });
  document.addEventListener("htmx:sendError", function (e) {
    failed(e, "No connection to attune. Your answers are kept in this browser; press Enter to try again.");
  });

  // ---- Start ----------------------------------------------------------------

  document.addEventListener("keydown", onKey);
  // Enter on a radio button or check box would submit the form by itself
  // (implicit submission, on keypress); onKey decides instead.
  document.addEventListener("keypress", function (e) {
    var t = e.target;
    if (swallow !== null && e.key === swallow) { e.preventDefault(); }
    else if (e.key === "Enter" && cur && t.form === cur.form && (t.type === "radio" || t.type === "checkbox")) { e.preventDefault(); }
    swallow = null;
  }, true);
  document.addEventListener("keyup", function () { swallow = null; }, true);
  ["keydown", "mousedown", "mousemove", "wheel", "touchstart", "scroll"].forEach(function (ev) {
    document.addEventListener(ev, sawInput, { passive: true, capture: true });
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { flush(); }
    lastTick = Date.now();
  });
  window.addEventListener("pagehide", flush);
  // A page the browser restores from its back-forward cache is the page as
  // it was left, not as the server would show it now: a content note opened
  // since (in a later page, another tab) would come back. Such a page is
  // loaded afresh.
  window.addEventListener("pageshow", function (e) {
    if (e.persisted && document.querySelector("#content-note")) { window.location.reload(); }
  });
  setInterval(tick, 1000);

  if (window.htmx) {
    window.htmx.onLoad(setup);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { setup(document.body); });
  } else {
    setup(document.body);
  }
})();

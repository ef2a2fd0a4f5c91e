// memtrace review: keyboard shortcuts and the writes (JSON POSTs with the token header).
// Written for memtrace (no library); served from the package, as the page's CSP requires.
//
// A key never writes what was not meant: Enter decides only inside the decision form and never
// on a link, a fold, a button or in the note (each keeps its own behaviour); single-letter keys
// act only while nothing that takes text has the focus.
"use strict";

(function () {
  const token = document.querySelector('meta[name="review-token"]').content;

  function typing(event) {
    const target = event.target;
    const tag = target.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && target.type !== "radio");
  }

  function modified(event) {
    return event.ctrlKey || event.metaKey || event.altKey;
  }

  function post(path, body) {
    return fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Review-Token": token },
      body: JSON.stringify(body),
      credentials: "same-origin",
    }).then(function (response) {
      return response.json().then(function (data) { return { ok: response.ok, data: data }; });
    });
  }

  // --- every page: undo the last decision (u), back to the queues (q) -------------------
  const saved = document.getElementById("saved");
  const form = document.getElementById("review-form");
  function undo() {
    if (!saved) return;
    post("/api/undo", { review_id: saved.dataset.review, queue: form ? form.dataset.queue : "all" })
      .then(function (result) {
        if (result.ok) window.location.href = result.data.next;
        else saved.textContent = "not undone: " + result.data.error;
      });
  }
  if (saved) document.getElementById("undo").addEventListener("click", undo);
  document.addEventListener("keydown", function (event) {
    if (typing(event) || modified(event)) return;
    if (event.key === "u" && saved) undo();
    else if (event.key === "q") window.location.href = "/";
    else return;
    event.preventDefault();
  });

  // --- the queue list: digits or j/k + Enter open a queue -------------------------------
  const queueLinks = Array.from(document.querySelectorAll("a.queue-link"));
  if (queueLinks.length) {
    let current = -1;
    document.addEventListener("keydown", function (event) {
      if (typing(event) || modified(event)) return;
      if (event.key >= "1" && event.key <= "9") {
        const link = queueLinks[Number(event.key) - 1];
        if (link) window.location.href = link.href;
      } else if (event.key === "j" || event.key === "k") {
        current = Math.max(0, Math.min(queueLinks.length - 1, current + (event.key === "j" ? 1 : -1)));
        queueLinks[current].focus();
      }
    });
  }

  // --- a case page --------------------------------------------------------------------
  if (!form) return;
  const candidates = Array.from(form.querySelectorAll("li.candidate"));
  const typeSelect = document.getElementById("error-type");
  const note = document.getElementById("note");
  const status = document.getElementById("status");
  let busy = false;
  let warned = "";  // the op + type a contradiction was shown for: Enter again saves it

  function selectedIndex() {
    return candidates.findIndex(function (li) { return li.querySelector("input").checked; });
  }

  function pick(index) {
    if (!candidates.length) return;
    const i = Math.max(0, Math.min(candidates.length - 1, index));
    candidates.forEach(function (li) { li.classList.remove("picked"); });
    const li = candidates[i];
    const radio = li.querySelector("input");
    radio.checked = true;
    radio.focus({ preventScroll: true });  // Enter now acts in the decision form
    li.classList.add("picked");
    const fold = li.querySelector("details.io-fold");
    if (fold) fold.open = true;
    li.scrollIntoView({ block: "nearest" });
    // the verdict's own type on its op, else the kind's usual error type; a digit changes it
    const verdictOp = li.dataset.op === form.dataset.verdictOp && form.dataset.verdictType;
    typeSelect.value = verdictOp ? form.dataset.verdictType : li.dataset.type;
    say("");
  }

  function say(text, css) {
    status.textContent = text;
    status.className = css || "";
  }

  function send(decision) {
    if (busy) return;
    const checked = form.querySelector('input[name="op"]:checked');
    const body = {
      trace_id: form.dataset.trace,
      case_id: form.dataset.case,
      queue: form.dataset.queue,
      decision: decision,
      op_id: decision === "correct" && checked ? checked.value : null,
      error_type: decision === "correct" ? typeSelect.value : null,
      note: note.value,
    };
    busy = true;
    say("saving…");
    post("/api/review", body)
      .then(function (result) {
        if (!result.ok) {
          busy = false;
          say("not saved: " + result.data.error, "error");
          return;
        }
        say(result.data.decision + " saved", "ok");
        window.location.href = result.data.next;
      })
      .catch(function (error) {
        busy = false;
        say("not saved: " + error, "error");
      });
  }

  // The picked op and type: unchanged, a confirm; a type the op's kind does not suggest asks
  // once (the same Enter again saves it).
  function decide() {
    const i = selectedIndex();
    const type = typeSelect.value;
    const li = i >= 0 ? candidates[i] : null;
    if (li && li.dataset.op === form.dataset.verdictOp && type === form.dataset.verdictType) {
      send("confirm");
      return;
    }
    if (li && li.dataset.fits.split(" ").indexOf(type) < 0 && warned !== li.dataset.op + type) {
      warned = li.dataset.op + type;
      say(type + " on a " + li.dataset.kind + " operation? Enter again saves it; a digit picks another type.", "ask");
      return;
    }
    send("correct");
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();  // the save button (click, or Enter on it)
    decide();
  });
  document.getElementById("confirm").addEventListener("click", function () { send("confirm"); });
  document.getElementById("skip").addEventListener("click", function () { send("skip"); });
  document.getElementById("unfold").addEventListener("click", function () {
    const folds = form.querySelectorAll("details.io-fold");
    const open = Array.from(folds).some(function (d) { return !d.open; });
    folds.forEach(function (d) { d.open = open; });
  });
  candidates.forEach(function (li, i) {
    li.querySelector("input").addEventListener("change", function () { pick(i); });
  });
  typeSelect.addEventListener("change", function () { say(""); });
  const start = selectedIndex();
  if (start >= 0) {
    // the verdict's op starts picked and focused: Enter at once is a confirm
    candidates[start].classList.add("picked");
    candidates[start].querySelector("input").focus({ preventScroll: true });
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && typing(event)) {
      // back to the picked candidate: the keys, and Enter, act in the decision form again
      const i = selectedIndex();
      if (i >= 0) candidates[i].querySelector("input").focus({ preventScroll: true });
      else event.target.blur();
      return;
    }
    if (event.key === "Enter") {
      // only in the decision form, and never on what Enter already means something for
      const tag = event.target.tagName;
      const own = tag === "A" || tag === "BUTTON" || tag === "SUMMARY" || tag === "TEXTAREA";
      if (own || modified(event) || !form.contains(event.target)) return;
      event.preventDefault();
      decide();
      return;
    }
    if (typing(event) || modified(event)) return;
    const key = event.key;
    if (key === "c") send("confirm");
    else if (key === "s") send("skip");
    else if (key === "j") pick(selectedIndex() + 1);
    else if (key === "k") pick(selectedIndex() - 1);
    else if (key >= "1" && key <= "9" && typeSelect.options[Number(key) - 1]) {
      typeSelect.selectedIndex = Number(key) - 1;
      say("");
    } else if (key === "n") note.focus();
    else return;
    event.preventDefault();
  });
})();

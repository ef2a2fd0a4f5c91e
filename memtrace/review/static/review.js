// memtrace review: keyboard shortcuts and the one write (a JSON POST with the token header).
// Written for memtrace (no library); served from the package, as the page's CSP requires.
"use strict";

(function () {
  const token = document.querySelector('meta[name="review-token"]').content;

  function typing(event) {
    const target = event.target;
    const tag = target.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && target.type !== "radio");
  }

  // --- the queue list: digits or j/k + Enter open a queue -------------------------------
  const queueLinks = Array.from(document.querySelectorAll("a.queue-link"));
  if (queueLinks.length) {
    let current = -1;
    document.addEventListener("keydown", function (event) {
      if (typing(event) || event.ctrlKey || event.metaKey || event.altKey) return;
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
  const form = document.getElementById("review-form");
  if (!form) return;
  const section = document.getElementById("case");
  const candidates = Array.from(form.querySelectorAll("li.candidate"));
  const typeSelect = document.getElementById("error-type");
  const note = document.getElementById("note");
  const status = document.getElementById("status");
  let busy = false;

  function selectedIndex() {
    return candidates.findIndex(function (li) { return li.querySelector("input").checked; });
  }

  function pick(index) {
    if (!candidates.length) return;
    const i = Math.max(0, Math.min(candidates.length - 1, index));
    candidates.forEach(function (li) { li.classList.remove("picked"); });
    const li = candidates[i];
    li.querySelector("input").checked = true;
    li.classList.add("picked");
    li.scrollIntoView({ block: "nearest" });
    typeSelect.value = li.dataset.type;  // the kind's usual error type; a digit changes it
  }

  function send(decision) {
    if (busy) return;
    const checked = form.querySelector('input[name="op"]:checked');
    const body = {
      trace_id: section.dataset.trace,
      case_id: section.dataset.case,
      queue: section.dataset.queue,
      decision: decision,
      op_id: decision === "correct" && checked ? checked.value : null,
      error_type: decision === "correct" ? typeSelect.value : null,
      note: note.value,
    };
    busy = true;
    status.textContent = "saving…";
    fetch("/api/review", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Review-Token": token },
      body: JSON.stringify(body),
      credentials: "same-origin",
    })
      .then(function (response) {
        return response.json().then(function (data) { return { ok: response.ok, data: data }; });
      })
      .then(function (result) {
        if (!result.ok) {
          busy = false;
          status.textContent = "not saved: " + result.data.error;
          status.className = "error";
          return;
        }
        status.textContent = decision + " saved";
        window.location.href = result.data.next;
      })
      .catch(function (error) {
        busy = false;
        status.textContent = "not saved: " + error;
        status.className = "error";
      });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    send("correct");
  });
  document.getElementById("confirm").addEventListener("click", function () { send("confirm"); });
  document.getElementById("skip").addEventListener("click", function () { send("skip"); });
  candidates.forEach(function (li, i) {
    li.querySelector("input").addEventListener("change", function () { pick(i); });
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && typing(event)) {
      event.target.blur();
      return;
    }
    if (typing(event) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    if (key === "c") send("confirm");
    else if (key === "s") send("skip");
    else if (key === "Enter") send("correct");
    else if (key === "j") pick(selectedIndex() + 1);
    else if (key === "k") pick(selectedIndex() - 1);
    else if (key >= "1" && key <= "9" && typeSelect.options[Number(key) - 1]) {
      typeSelect.selectedIndex = Number(key) - 1;
    } else if (key === "n") note.focus();
    else if (key === "q") window.location.href = "/";
    else return;
    event.preventDefault();
  });
})();

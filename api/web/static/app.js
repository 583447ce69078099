// Kinetoscope web page: upload with progress, and live run status.
"use strict";

function uploadForm(form) {
  const bar = document.getElementById("upload-progress");
  const status = document.getElementById("upload-status");
  const button = document.getElementById("upload-submit");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    const token = data.get("token");
    data.delete("token");
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    if (token) xhr.setRequestHeader("Authorization", "Bearer " + token);
    xhr.upload.addEventListener("progress", (e) => {
      if (!e.lengthComputable) return;
      bar.value = Math.round(100 * e.loaded / e.total);
      status.textContent = "uploading " + bar.value + "%";
    });
    xhr.addEventListener("load", () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = { error: xhr.responseText }; }
      if (xhr.status === 202 && body.page_url) {
        status.textContent = "uploaded: analysing";
        window.location.assign(body.page_url);
        return;
      }
      button.disabled = false;
      bar.hidden = true;
      status.textContent = "upload refused (" + xhr.status + "): " + (body.error || xhr.statusText);
      status.className = "error";
    });
    xhr.addEventListener("error", () => {
      button.disabled = false;
      status.textContent = "upload failed: the connection broke";
      status.className = "error";
    });
    button.disabled = true;
    bar.hidden = false;
    bar.value = 0;
    status.className = "";
    status.textContent = "uploading";
    xhr.send(data);
  });
}

function watchRun(box) {
  const id = box.dataset.run;
  const tick = async () => {
    try {
      const r = await fetch("/api/v1/runs/" + encodeURIComponent(id), { headers: { Accept: "application/json" } });
      if (r.ok) {
        const run = await r.json();
        if (run.status === "done" || run.status === "failed") {
          window.location.replace(window.location.href);
          return;
        }
        const p = run.progress || {};
        document.getElementById("progress-phase").textContent = p.phase || run.status;
        document.getElementById("progress-bytes").textContent = (p.bytes_read || 0).toLocaleString() + " bytes";
        document.getElementById("progress-events").textContent = (p.events || 0).toLocaleString();
        if (p.bytes_total) document.getElementById("progress-bar").value = Math.min(100, Math.round(100 * (p.bytes_read || 0) / p.bytes_total));
      }
    } catch (e) { /* keep polling */ }
    setTimeout(tick, 700);
  };
  setTimeout(tick, 500);
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("upload-form");
  if (form) uploadForm(form);
  const box = document.getElementById("run-progress");
  if (box) watchRun(box);
  // Menus marked data-autosubmit submit their form when changed.
  document.querySelectorAll("select[data-autosubmit]").forEach((sel) => {
    sel.addEventListener("change", () => sel.form.submit());
  });
});

// A page restored from the back-forward cache shows stale runs: reload it.
window.addEventListener("pageshow", (e) => { if (e.persisted) window.location.reload(); });


// "open in Perfetto": fetch one rank's trace and hand it to ui.perfetto.dev
// through its postMessage protocol (PING until it answers PONG, then the
// buffer), so that nothing is uploaded anywhere but the browser.
(function () {
  const origin = "https://ui.perfetto.dev";
  document.querySelectorAll("button.perfetto").forEach(function (b) {
    b.addEventListener("click", async function () {
      b.disabled = true;
      const label = b.textContent;
      b.textContent = "reading…";
      try {
        const resp = await fetch(b.dataset.url, { credentials: "same-origin" });
        if (!resp.ok) throw new Error(resp.status + " " + (await resp.text()));
        const buffer = await resp.arrayBuffer();
        const win = window.open(origin);
        if (!win) throw new Error("the browser blocked the Perfetto window");
        const timer = setInterval(function () { win.postMessage("PING", origin); }, 50);
        const onMessage = function (e) {
          if (e.origin !== origin || e.data !== "PONG") return;
          clearInterval(timer);
          window.removeEventListener("message", onMessage);
          win.postMessage({ perfetto: { buffer: buffer, title: b.dataset.title, fileName: b.dataset.title + ".json.gz" } }, origin);
        };
        window.addEventListener("message", onMessage);
        setTimeout(function () { clearInterval(timer); }, 30000);
        b.textContent = label;
      } catch (err) {
        b.textContent = "Perfetto: " + err.message;
      } finally {
        b.disabled = false;
      }
    });
  });
})();

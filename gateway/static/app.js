// The page of the drawn-animation service: a drawing in, what the service sees drawn over
// it (box, outline, joints), fixed by hand, then animated. Plain JavaScript, no build step.
// It speaks the API as any client does (GET /motions, POST /annotate, POST /animate, and for
// long requests POST /jobs then GET /jobs/<id>; see /openapi.json), with the same field names.
"use strict";

// COCO order, as /annotate answers and /animate takes the keypoints.
const COCO = [
  "nose", "left_eye", "right_eye", "left_ear", "right_ear",
  "left_shoulder", "right_shoulder", "left_elbow", "right_elbow",
  "left_wrist", "right_wrist", "left_hip", "right_hip",
  "left_knee", "right_knee", "left_ankle", "right_ankle",
];
const BONES = [
  [0, 1], [0, 2], [1, 3], [2, 4], [5, 6], [5, 7], [7, 9], [6, 8], [8, 10],
  [5, 11], [6, 12], [11, 12], [11, 13], [13, 15], [12, 14], [14, 16],
];
const JOINT_RADIUS_PX = 9; // on screen, whatever the photo's size
const MAX_BUSY_RETRIES = 3;
const POLL_FIRST_MS = 500; // a job's state is asked for this often at first,
const POLL_GROWTH = 1.25; // then a little less often each time,
const POLL_MAX_MS = 2000; // up to this
const POLL_MAX_FAILURES = 8; // unanswered asks in a row (about 15 s) before the page gives up on a job
const SVG = "http://www.w3.org/2000/svg";
const MASK_RGB = [0, 87, 184];

// Words for the API's error codes (the message the service sent is added where it helps).
const WORDS = {
  payload_too_large: "That file is too big to send. Use a smaller photo.",
  image_too_large: "That picture has too many pixels. Use a smaller photo.",
  invalid_image: "That file is not a picture the service can read. Use a PNG, JPEG or WebP photo.",
  unsupported_media_type: "That kind of file is not accepted. Use a PNG, JPEG or WebP photo.",
  no_character_detected:
    "No drawn figure was found in this picture. Photograph the whole drawing, on plain paper, in good light.",
  pose_not_found: "The figure's joints could not be found. Try a clearer photo of the drawing.",
  overloaded: "The service is busy.",
  model_unavailable: "The service cannot look at drawings right now. Try again in a minute.",
  model_timeout: "The service took too long to answer. Try again.",
  storage_unavailable: "The animations could not be stored. Try again in a minute.",
  request_timeout: "The upload took too long. Check the connection and try again.",
  unauthorized: "This service needs an API key: enter it above, then try again.",
  bad_request: "The service refused the request",
  unknown_motion: "The service does not know that motion",
  invalid_motion: "The motion file cannot be used",
};
const SAY_WHY = new Set(["bad_request", "unknown_motion", "invalid_motion"]);

const $ = (id) => document.getElementById(id);
const state = {
  file: null,
  annotation: null, // what /annotate answered
  keypoints: null, // [[x, y] x 17], upload px, as the person left them
  maskEdited: false,
  tool: "joints",
  key: sessionStorage.getItem("apiKey") || "",
  retry: null, // what to do again once the API key is given
  links: {}, // the last answer's Link headers by title: each sprite sheet's layout
  run: 0, // counts what the user started (a drawing, an Animate): a job's polling stops once stale
};

class ShownError extends Error {}

function sleep(ms) { return new Promise((done) => setTimeout(done, ms)); }

function setStatus(text) { $("status").textContent = text; }

function showError(text) {
  const box = $("error");
  box.textContent = text;
  box.hidden = !text;
}

function words(status, error, retryAfter) {
  const code = error.code || "";
  let text = WORDS[code] || `Something went wrong (${status}${code ? ", " + code : ""}).`;
  if (SAY_WHY.has(code) && error.message) text += `: ${error.message}`;
  if (code === "overloaded") text += ` Try again in ${retryAfter || 2} s.`;
  return text;
}

// POST `form` to `path` and the JSON answer; a busy service is asked again after its
// Retry-After (a few times); any other refusal becomes a ShownError in words.
async function post(path, form, retry) {
  for (let attempt = 0; ; attempt++) {
    const headers = state.key ? { Authorization: `Bearer ${state.key}` } : {};
    let reply;
    try {
      reply = await fetch(path, { method: "POST", body: form, headers });
    } catch (exc) {
      throw new ShownError("The service cannot be reached. Check the connection and try again.");
    }
    if (reply.ok) {
      state.links = linksByTitle(reply.headers.get("Link"));
      return reply.json();
    }
    let error = {};
    try { error = (await reply.json()).error || {}; } catch (exc) { /* not JSON: no words */ }
    const retryAfter = Number(reply.headers.get("Retry-After")) || 2;
    if (error.code === "overloaded" && attempt < MAX_BUSY_RETRIES) {
      setStatus(`The service is busy; trying again in ${retryAfter} s…`);
      await sleep(retryAfter * 1000);
      continue;
    }
    if (reply.status === 401) {
      state.retry = retry;
      $("key-form").hidden = false;
      $("key").focus();
    }
    throw new ShownError(words(reply.status, error, retryAfter));
  }
}

// `<url>; rel="describedby"; ...; title="dab", <url>; ...` -> {dab: url}: where each sprite
// sheet's layout is (format=sprites).
function linksByTitle(header) {
  const links = {};
  for (const match of (header || "").matchAll(/<([^>]*)>[^,]*?title="([^"]*)"/g)) links[match[2]] = match[1];
  return links;
}

async function guarded(task) {
  showError("");
  try {
    await task();
  } catch (exc) {
    setStatus("");
    showError(exc instanceof ShownError ? exc.message : `Something went wrong: ${exc.message}`);
  }
}

// --- 1. the drawing -------------------------------------------------------------------

function onFile(input) {
  const file = input.files && input.files[0];
  input.value = ""; // the same file picked again is a new pick
  if (!file) return;
  state.run++; // a job still being watched is of the drawing before
  state.file = file;
  $("photo").src = URL.createObjectURL(file);
  for (const id of ["edit", "animate-section", "results-section"]) $(id).hidden = true;
  guarded(annotate);
}

// `box` (upload px, [left, top, right, bottom]): look only there, as the person boxed it.
async function annotate(box = null) {
  setStatus("Looking at the drawing…");
  const form = new FormData();
  form.append("image", state.file);
  if (box) form.append("bbox", JSON.stringify(box));
  const annotation = await post("/annotate", form, () => annotate(box));
  state.annotation = annotation;
  await showAnnotation();
  setStatus("");
}

// --- 2. joints and outline --------------------------------------------------------------

async function showAnnotation() {
  const a = state.annotation;
  state.keypoints = a.keypoints.map((p) => [p[0], p[1]]);
  state.maskEdited = false;
  const canvas = $("outline");
  canvas.width = a.image.width;
  canvas.height = a.image.height;
  await drawMask(canvas, a.mask);
  const list = $("warnings");
  list.replaceChildren(...a.quality.warnings.map((w) => {
    const item = document.createElement("li");
    item.textContent = `Check the outline: ${w.message}.`;
    return item;
  }));
  $("edit").hidden = false;
  $("animate-section").hidden = false;
  fitStage();
  drawOverlay();
}

// The mask (a 0/255 PNG over its box) painted into the outline canvas, tinted.
async function drawMask(canvas, mask) {
  const image = new Image();
  image.src = `data:image/png;base64,${mask.png}`;
  await image.decode();
  const [left, top, right, bottom] = mask.box;
  const scratch = document.createElement("canvas");
  scratch.width = right - left;
  scratch.height = bottom - top;
  const sctx = scratch.getContext("2d");
  sctx.drawImage(image, 0, 0);
  const pixels = sctx.getImageData(0, 0, scratch.width, scratch.height);
  const data = pixels.data;
  for (let i = 0; i < data.length; i += 4) {
    const inside = data[i] > 0;
    [data[i], data[i + 1], data[i + 2]] = MASK_RGB;
    data[i + 3] = inside ? 255 : 0;
  }
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.putImageData(pixels, left, top);
}

// The stage takes the photo's shape, as wide as the page allows and at most 65% as high.
function fitStage() {
  const a = state.annotation;
  if (!a) return;
  const stage = $("stage");
  const room = stage.parentElement.clientWidth;
  const width = Math.min(room, (window.innerHeight * 0.65 * a.image.width) / a.image.height);
  stage.style.width = `${width}px`;
  stage.style.height = `${(width * a.image.height) / a.image.width}px`;
  $("photo").style.height = stage.style.height;
}

function pxPerScreenPx() {
  return state.annotation.image.width / $("overlay").getBoundingClientRect().width;
}

function drawOverlay() {
  const a = state.annotation;
  const svg = $("overlay");
  svg.setAttribute("viewBox", `0 0 ${a.image.width} ${a.image.height}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const unit = pxPerScreenPx();
  const [l, t, r, b] = a.bbox;
  const box = element("rect", { class: "box", x: l, y: t, width: r - l, height: b - t,
                                "stroke-width": 2 * unit });
  const bones = BONES.map(([i, j]) => element("line", { class: "bone", "data-bone": `${i}-${j}`,
                                                        "stroke-width": 3 * unit }));
  const joints = COCO.map((name, i) => {
    const joint = element("circle", { class: "joint", r: JOINT_RADIUS_PX * unit,
                                      "stroke-width": 2 * unit, "data-testid": "joint",
                                      "data-name": name, "data-index": i });
    const title = document.createElementNS(SVG, "title");
    title.textContent = name.replace("_", " ");
    joint.append(title);
    return joint;
  });
  const cursor = element("circle", { class: "brush-cursor", r: 0, "stroke-width": unit });
  svg.replaceChildren(box, ...bones, ...joints, cursor);
  placeSkeleton();
}

function element(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function placeSkeleton() {
  const k = state.keypoints;
  for (const line of $("overlay").querySelectorAll(".bone")) {
    const [i, j] = line.dataset.bone.split("-").map(Number);
    line.setAttribute("x1", k[i][0]); line.setAttribute("y1", k[i][1]);
    line.setAttribute("x2", k[j][0]); line.setAttribute("y2", k[j][1]);
  }
  for (const joint of $("overlay").querySelectorAll(".joint")) {
    const [x, y] = k[Number(joint.dataset.index)];
    joint.setAttribute("cx", x); joint.setAttribute("cy", y);
  }
}

function toImage(event) {
  const rect = $("overlay").getBoundingClientRect();
  const a = state.annotation;
  return [((event.clientX - rect.left) * a.image.width) / rect.width,
          ((event.clientY - rect.top) * a.image.height) / rect.height];
}

let drag = null; // {joint} while a joint moves, {last} while a brush paints, {from} while a box is drawn
const MIN_BOX_PX = 8; // a box drawn narrower (upload px) is a slip, not a figure

function onPointerDown(event) {
  if (!state.annotation || event.button > 0) return;
  const svg = $("overlay");
  if (state.tool === "joints") {
    const joint = event.target.closest(".joint");
    if (!joint) return;
    drag = { joint };
    joint.classList.add("dragging");
  } else if (state.tool === "box") {
    drag = { from: toImage(event), rect: element("rect", { class: "new-box", "data-testid": "new-box",
                                                            "stroke-width": 2 * pxPerScreenPx() }) };
    svg.append(drag.rect);
    placeBox(drag.rect, drag.from, drag.from);
  } else {
    drag = { last: toImage(event) };
    paint(drag.last, drag.last);
  }
  svg.setPointerCapture(event.pointerId);
  event.preventDefault();
}

function onPointerMove(event) {
  if (state.annotation && isBrush(state.tool)) showBrush(toImage(event));
  if (!drag) return;
  const point = toImage(event);
  if (drag.from) {
    placeBox(drag.rect, drag.from, point);
  } else if (drag.joint) {
    state.keypoints[Number(drag.joint.dataset.index)] = inImage(point);
    placeSkeleton();
  } else {
    paint(drag.last, point);
    drag.last = point;
  }
  event.preventDefault();
}

function onPointerUp(event) {
  if (!drag) return;
  if (drag.joint) drag.joint.classList.remove("dragging");
  const from = drag.from;
  if (from) drag.rect.remove();
  drag = null;
  $("overlay").releasePointerCapture(event.pointerId);
  if (from && event.type === "pointerup") lookInBox(from, toImage(event));
}

function isBrush(tool) { return tool === "paint" || tool === "erase"; }

// A point (upload px) moved to the nearest point of the image.
function inImage([x, y]) {
  const { width, height } = state.annotation.image;
  return [Math.min(Math.max(x, 0), width), Math.min(Math.max(y, 0), height)];
}

// The box between two corners (upload px), inside the image.
function boxBetween(from, to) {
  const [[x1, y1], [x2, y2]] = [inImage(from), inImage(to)];
  return [Math.min(x1, x2), Math.min(y1, y2), Math.max(x1, x2), Math.max(y1, y2)];
}

function placeBox(rect, from, to) {
  const [l, t, r, b] = boxBetween(from, to);
  rect.setAttribute("x", l); rect.setAttribute("y", t);
  rect.setAttribute("width", r - l); rect.setAttribute("height", b - t);
}

// The drawing looked at again inside the box the person drew (one figure of several, or
// a figure the detector boxed wrong): new joints and outline, the joints tool again.
function lookInBox(from, to) {
  const box = boxBetween(from, to).map(Math.round);
  if (box[2] - box[0] < MIN_BOX_PX || box[3] - box[1] < MIN_BOX_PX) return;
  setTool("joints");
  guarded(() => annotate(box));
}

function brushRadius() { return (Number($("brush").value) / 2) * pxPerScreenPx(); }

function showBrush([x, y]) {
  const cursor = $("overlay").querySelector(".brush-cursor");
  if (!cursor) return;
  cursor.setAttribute("cx", x); cursor.setAttribute("cy", y);
  cursor.setAttribute("r", brushRadius());
}

// A stroke from `from` to `to` (image px) added to the outline, or rubbed out of it.
function paint(from, to) {
  const ctx = $("outline").getContext("2d");
  ctx.save();
  ctx.globalCompositeOperation = state.tool === "erase" ? "destination-out" : "source-over";
  ctx.strokeStyle = ctx.fillStyle = `rgb(${MASK_RGB.join(",")})`;
  ctx.lineCap = "round";
  ctx.lineWidth = 2 * brushRadius();
  ctx.beginPath();
  ctx.moveTo(from[0], from[1]);
  ctx.lineTo(to[0] + 0.01, to[1]);
  ctx.stroke();
  ctx.restore();
  state.maskEdited = true;
}

function setTool(tool) {
  state.tool = tool;
  for (const button of document.querySelectorAll(".tool")) {
    button.setAttribute("aria-pressed", String(button.dataset.tool === tool));
  }
  $("stage").classList.toggle("painting", tool !== "joints");
  $("stage").classList.toggle("boxing", tool === "box");
  showBrush([-1000, -1000]);
}

// The outline as the API takes it: the painted pixels' box and a 0/255 PNG over it.
async function maskOption() {
  if (!state.maskEdited) return state.annotation.mask; // as it came: the very same bytes
  const canvas = $("outline");
  const { width, height } = canvas;
  const data = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  let [left, top, right, bottom] = [width, height, 0, 0];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (data[(y * width + x) * 4 + 3] > 0) {
        if (x < left) left = x;
        if (x >= right) right = x + 1;
        if (y < top) top = y;
        if (y >= bottom) bottom = y + 1;
      }
    }
  }
  if (right <= left) throw new ShownError("The outline is empty: paint over the figure first.");
  const out = document.createElement("canvas");
  out.width = right - left;
  out.height = bottom - top;
  const octx = out.getContext("2d");
  const pixels = octx.createImageData(out.width, out.height);
  for (let y = top; y < bottom; y++) {
    for (let x = left; x < right; x++) {
      const value = data[(y * width + x) * 4 + 3] > 0 ? 255 : 0;
      const o = ((y - top) * out.width + (x - left)) * 4;
      pixels.data[o] = pixels.data[o + 1] = pixels.data[o + 2] = value;
      pixels.data[o + 3] = 255;
    }
  }
  octx.putImageData(pixels, 0, 0);
  return { box: [left, top, right, bottom], png: out.toDataURL("image/png") };
}

// --- 3. motions, 4. animations ----------------------------------------------------------

// Groups in the order the page shows them; a motion without one (a MOTIONS_DIR file) last.
const GROUPS = ["dance", "everyday", "sport", "silly"];

async function loadMotions() {
  const reply = await fetch("/motions");
  if (!reply.ok) throw new ShownError("The list of motions could not be loaded. Reload the page.");
  const table = await reply.json();
  const groups = new Map([...GROUPS, ""].map((g) => [g, []]));
  for (const motion of table.motions) {
    const group = groups.has(motion.group) ? motion.group : "";
    groups.get(group).push(motionButton(motion, table.defaults.includes(motion.name)));
  }
  const sections = [...groups].filter(([, buttons]) => buttons.length).map(([group, buttons]) => {
    const section = document.createElement("div");
    section.className = "motion-group";
    section.dataset.testid = "motion-group";
    section.dataset.group = group;
    section.setAttribute("role", "group");
    const heading = document.createElement("h3");
    heading.textContent = group || "more";
    section.setAttribute("aria-label", heading.textContent);
    const row = document.createElement("div");
    row.className = "motions";
    row.append(...buttons);
    section.append(heading, row);
    return section;
  });
  $("motions").replaceChildren(...sections);
}

function motionButton(motion, pressed) {
  const button = document.createElement("button");
  button.type = "button";
  button.title = motion.description || "";
  button.dataset.testid = "motion";
  button.dataset.name = motion.name;
  button.setAttribute("aria-pressed", String(pressed));
  const preview = document.createElement("img");
  preview.src = motion.preview;
  preview.alt = "";  // the name says it; the picture shows it
  preview.dataset.testid = "preview";
  preview.loading = "lazy";
  preview.width = preview.height = 48;
  const label = document.createElement("span");
  label.textContent = motion.name.replaceAll("_", " ");
  button.append(preview, label);
  button.addEventListener("click", () => {
    button.setAttribute("aria-pressed", String(button.getAttribute("aria-pressed") !== "true"));
  });
  return button;
}

function chosenMotions() {
  return [...document.querySelectorAll("#motions [aria-pressed=true]")].map((b) => b.dataset.name);
}

// Whether a request goes to POST /jobs (answered at once, then watched) rather than POST
// /animate (one answer once every motion is stored). /animate keeps a connection open and the
// page shows nothing but "Animating…" meanwhile: fine for the default four motions (a few
// seconds), but each motion more adds its render, and a long wait on a phone is cut short by
// a screen lock, a flaky network or a proxy's timeout, and tells the user nothing. A job
// says how far it got, motion by motion. The page sends no size, fps or motion file of its
// own, so what a request costs grows with its motions alone (every format costs about the
// same: an MP4 took 1.3x a GIF's time, measured): more than the defaults' four is long.
const LONG_AFTER_MOTIONS = 4;

function isLongRequest(motions) {
  return motions.length > LONG_AFTER_MOTIONS;
}

async function animate() {
  const run = ++state.run;
  const motions = chosenMotions();
  if (!motions.length) throw new ShownError("Pick at least one motion.");
  const format = $("format").value;
  const form = new FormData();
  form.append("image", state.file);
  form.append("motions", motions.join(","));
  form.append("format", format);
  form.append("bbox", JSON.stringify(state.annotation.bbox));
  form.append("keypoints", JSON.stringify(state.keypoints));
  form.append("mask", JSON.stringify(await maskOption()));
  if (isLongRequest(motions)) {
    await animateAsJob(form, motions, format, run);
    return;
  }
  $("animate").disabled = true;
  setStatus("Animating… (a few seconds)");
  try {
    const urls = await post("/animate", form, animate);
    showResults(urls, format);
    setStatus("");
  } finally {
    $("animate").disabled = false;
  }
}

// A long request: POST /jobs with /animate's very form, then its state asked for until it
// is done (each motion's animation shown) or failed (its error shown in words), or until the
// user starts something else (another drawing, another Animate): then the job runs on,
// unwatched.
async function animateAsJob(form, motions, format, run) {
  $("animate").disabled = true;
  setStatus("Sending the drawing…");
  let job;
  try {
    job = await post("/jobs", form, animate);
  } finally {
    $("animate").disabled = false; // pressed again, it starts anew and this one is let go
  }
  if (run !== state.run) return;
  showProgress(motions);
  let delay = POLL_FIRST_MS;
  let failures = 0;
  for (;;) {
    await sleep(delay);
    if (run !== state.run) return;
    delay = Math.min(POLL_MAX_MS, delay * POLL_GROWTH);
    let doc;
    try {
      doc = await jobState(job.status_url);
    } catch (exc) {
      if (run !== state.run) return;
      if (!(exc instanceof Unanswered) || ++failures >= POLL_MAX_FAILURES) throw exc;
      continue;
    }
    failures = 0;
    if (run !== state.run) return;
    updateProgress(doc);
    if (doc.status === "done") {
      state.links = doc.layouts || {};
      showResults(doc.result, format);
      setStatus("");
      return;
    }
    if (doc.status === "failed") {
      $("results-section").hidden = true;
      throw new ShownError(words("failed", doc.error || {}));
    }
  }
}

class Unanswered extends ShownError {} // asking for a job's state may work next time

// GET a job's state (its document, gateway/jobs/records.py).
async function jobState(url) {
  const headers = state.key ? { Authorization: `Bearer ${state.key}` } : {};
  let reply;
  try {
    reply = await fetch(url, { headers, cache: "no-store" });
  } catch (exc) {
    throw new Unanswered("The service cannot be reached. Check the connection and try again.");
  }
  if (reply.ok) return reply.json();
  let error = {};
  try { error = (await reply.json()).error || {}; } catch (exc) { /* not JSON: no words */ }
  if (reply.status >= 500) throw new Unanswered(words(reply.status, error));
  if (reply.status === 404) {
    throw new ShownError("The service lost track of these animations (it may have restarted). Press Animate again.");
  }
  throw new ShownError(words(reply.status, error));
}

// One card per motion in the animations' place, each with its progress bar: moving while
// the motion waits (a job tells only waiting or done), full once it is stored.
function showProgress(motions) {
  const cards = motions.map((name) => {
    const card = document.createElement("figure");
    card.className = "pending";
    card.dataset.testid = "job-motion";
    card.dataset.name = name;
    const bar = document.createElement("progress");
    bar.id = `progress-${name}`;
    bar.max = 1; // no value: indeterminate, until the motion is done
    const caption = document.createElement("figcaption");
    const label = document.createElement("label");
    label.htmlFor = bar.id;
    label.textContent = name.replaceAll("_", " ");
    const said = document.createElement("span");
    said.className = "progress-state";
    said.textContent = "waiting";
    caption.append(label, said);
    card.append(bar, caption);
    return card;
  });
  $("results").replaceChildren(...cards);
  $("results-section").hidden = false;
  $("results-section").scrollIntoView({ behavior: "smooth", block: "start" });
  setStatus(`Animating ${motions.length} motions: waiting for the service…`);
}

function updateProgress(doc) {
  const progress = doc.progress || { done: 0, total: 0, motions: {} };
  for (const [name, said] of Object.entries(progress.motions || {})) {
    const card = $("results").querySelector(`.pending[data-name="${CSS.escape(name)}"]`);
    if (!card) continue;
    const bar = card.querySelector("progress");
    if (said === "done") bar.value = 1;
    else bar.removeAttribute("value");
    card.classList.toggle("done", said === "done");
    card.querySelector(".progress-state").textContent = said === "done" ? "done" : "waiting";
  }
  const text = doc.status === "queued"
    ? `Animating ${progress.total} motions: waiting for the service…`
    : `Animating: ${progress.done} of ${progress.total} motions done…`;
  if ($("status").textContent !== text) setStatus(text);
}

// The file name a download gets, by format (sprites: a PNG sheet; png: zipped frames).
const SUFFIXES = { gif: "gif", webp: "webp", mp4: "mp4", sprites: "png", png: "zip" };

function showResults(urls, format) {
  const cards = Object.entries(urls).map(([name, url]) => {
    const card = document.createElement("figure");
    card.dataset.testid = "result";
    card.dataset.name = name;
    let media;
    if (format === "png") {  // a zip: nothing to show but what it holds
      media = document.createElement("p");
      media.textContent = "Every frame as a PNG, zipped, with layout.json.";
    } else if (format === "mp4") {
      media = document.createElement("video");
      Object.assign(media, { autoplay: true, loop: true, muted: true, playsInline: true, controls: true });
    } else {
      media = document.createElement("img");
      media.alt = `The drawing, ${name.replaceAll("_", " ")}`;
    }
    if (format !== "png") media.src = url;
    const caption = document.createElement("figcaption");
    const label = document.createElement("span");
    label.textContent = name.replaceAll("_", " ");
    const link = document.createElement("a");
    link.href = url;
    link.download = `${name}.${SUFFIXES[format]}`;
    link.textContent = "Download";
    caption.append(label, link);
    if (format === "sprites" && state.links[name]) {
      const layout = document.createElement("a");
      layout.href = state.links[name];
      layout.download = `${name}.json`;
      layout.textContent = "Layout";
      layout.dataset.testid = "layout";
      caption.append(layout);
    }
    card.append(media, caption);
    return card;
  });
  $("results").replaceChildren(...cards);
  $("results-section").hidden = false;
  $("results-section").scrollIntoView({ behavior: "smooth", block: "start" });
}

// --- wiring -----------------------------------------------------------------------------

function start() {
  for (const id of ["file", "camera"]) $(id).addEventListener("change", (e) => onFile(e.target));
  const svg = $("overlay");
  svg.addEventListener("pointerdown", onPointerDown);
  svg.addEventListener("pointermove", onPointerMove);
  svg.addEventListener("pointerup", onPointerUp);
  svg.addEventListener("pointercancel", onPointerUp);
  for (const button of document.querySelectorAll(".tool")) {
    button.addEventListener("click", () => setTool(button.dataset.tool));
  }
  $("reset").addEventListener("click", () => guarded(showAnnotation));
  $("animate").addEventListener("click", () => guarded(animate));
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.key = $("key").value.trim();
    sessionStorage.setItem("apiKey", state.key);
    $("key-form").hidden = true;
    const again = state.retry;
    state.retry = null;
    if (again) guarded(again);
  });
  window.addEventListener("resize", () => { if (state.annotation) { fitStage(); drawOverlay(); } });
  guarded(loadMotions);
}

start();

// Images: pasted, dropped or picked ones wait above the input box, checked
// as the server checks them, for the next query; those a `user` event
// carries show as thumbnails in the conversation.
//
// An image is shown only as an <img> with a `data:` URL made here from
// its bytes, and only when it is one of IMAGE_KINDS. Never: load an image
// from an address.

import { state } from './state.js';
import { $, el } from './dom.js';
import { thousands } from './format.js';

/** The kinds an image may be (README "Images"), told by its first bytes as the server tells them. */
const IMAGE_KINDS = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** The largest image the server takes (actors/src/images.rs, MAX_IMAGE_BYTES). */
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/**
 * The most base64 the images of one query may add up to: the server
 * takes an input of at most 32 MiB (src/serve/mod.rs, INPUT_BODY_LIMIT),
 * 1 MiB of which is left to the text.
 */
const MAX_IMAGES_BASE64 = 31 * 1024 * 1024;

/** The media type of an image's first bytes, or null when it is none of IMAGE_KINDS. */
function imageKind(bytes) {
  const at = (offset, ...sig) => sig.every((b, i) => bytes[offset + i] === b);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (at(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (at(0, 0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return 'image/gif';
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp';
  return null;
}

/** Bytes as base64 (standard alphabet, padded), in slices so a large image fits the call stack. */
function toBase64(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** How many bytes a base64 string holds. */
function base64Bytes(data) {
  const text = String(data || '').replace(/\s+/g, '');
  return Math.floor((text.replace(/=+$/, '').length * 3) / 4);
}

/** 1536 as `1.5 KB`, 5242880 as `5.0 MB` (1024-based, as the server counts). */
function byteSize(n) {
  if (n < 1024) return n + ' bytes';
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KB';
  return (n / (1024 * 1024)).toFixed(1) + ' MB';
}

/** A `data:` URL showing an image, or null unless it is one of IMAGE_KINDS in clean base64. */
function imageUrl(mediaType, data) {
  if (!IMAGE_KINDS.includes(mediaType) || typeof data !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(data.replace(/\s+/g, ''))) return null;
  return 'data:' + mediaType + ';base64,' + data.replace(/\s+/g, '');
}

/** A `user` event's images, each a thumbnail that a click shows larger. */
export function messageImages(images) {
  const row = el('div', { class: 'message-images', 'data-testid': 'message-images' });
  images.forEach((image, i) => {
    const label = (image && image.source) || 'image ' + (i + 1);
    const url = image ? imageUrl(image.media_type, image.data) : null;
    if (!url) {
      row.append(el('span', { class: 'thumb-missing dim', text: '[' + label + ']' }));
      return;
    }
    const thumb = el('img', {
      class: 'thumb',
      'data-testid': 'message-image',
      'data-media-type': image.media_type,
      alt: label,
      title: label + ' \u00b7 ' + image.media_type + ' \u00b7 ' + byteSize(base64Bytes(image.data)) + ' (click to enlarge)',
      src: url,
    });
    thumb.addEventListener('click', () => thumb.classList.toggle('enlarged'));
    row.append(thumb);
  });
  return row;
}

/**
 * A file the user gave, checked as the server will check it: `{name,
 * mediaType, data, size}` (`data` base64), or an Error saying what is wrong.
 */
async function readImage(file) {
  const name = file.name || 'pasted image';
  if (file.size > MAX_IMAGE_BYTES) {
    return new Error(name + ' is ' + thousands(file.size) + ' bytes; an image may be at most 5 MB (' + thousands(MAX_IMAGE_BYTES) + ' bytes), so it was not added.');
  }
  let bytes;
  try {
    bytes = new Uint8Array(await file.arrayBuffer());
  } catch (e) {
    return new Error(name + ' could not be read (' + e.message + ').');
  }
  const mediaType = imageKind(bytes);
  if (!mediaType) return new Error(name + ' is not a PNG, JPEG, GIF or WebP image, so it was not added.');
  return { name, mediaType, data: toBase64(bytes), size: bytes.length };
}

/** Add files to the images waiting for the next query; say which could not be. */
async function addImages(files) {
  const problems = [];
  for (const file of files) {
    const image = await readImage(file);
    if (image instanceof Error) {
      problems.push(image.message);
      continue;
    }
    const total = state.pendingImages.reduce((sum, i) => sum + i.data.length, 0) + image.data.length;
    if (total > MAX_IMAGES_BASE64) {
      problems.push(image.name + ' was not added: with the images already here the message would be larger than the server takes (32 MB in all). Send these first.');
      continue;
    }
    state.pendingImages.push(image);
  }
  renderAttachments(problems.join(' '));
}

/** The chips of the waiting images above the input, each with its × button; `problem`: what could not be added. */
export function renderAttachments(problem) {
  const box = $('attachments');
  box.replaceChildren(...state.pendingImages.map(attachmentChip));
  box.hidden = state.pendingImages.length === 0;
  showAttachProblem(problem || '');
}

export function showAttachProblem(text) {
  $('attach-error').textContent = text;
  $('attach-error').hidden = !text;
}

function attachmentChip(image) {
  const remove = () => {
    state.pendingImages = state.pendingImages.filter((i) => i !== image);
    renderAttachments('');
    $('input').focus();
  };
  return el(
    'span',
    { class: 'attachment', 'data-testid': 'attachment', 'data-media-type': image.mediaType, title: image.name + ' \u00b7 ' + byteSize(image.size) },
    el('img', { class: 'attachment-thumb', alt: image.name, src: imageUrl(image.mediaType, image.data) }),
    el('span', { class: 'attachment-name', text: image.name }),
    el('button', { type: 'button', class: 'attachment-remove', 'data-testid': 'attachment-remove', 'aria-label': 'Remove ' + image.name, title: 'Remove', text: '\u00d7', onclick: remove }),
  );
}

/** The files a paste or a drop carries (an image copied from a page or a screenshot tool is one). */
function filesOf(transfer) {
  if (!transfer) return [];
  if (transfer.files && transfer.files.length) return [...transfer.files];
  return [...(transfer.items || [])].filter((item) => item.kind === 'file').map((item) => item.getAsFile()).filter(Boolean);
}

/** Ctrl+V of an image (a screenshot): it waits for the next query; text pastes as usual. */
export function onPaste(event) {
  const files = filesOf(event.clipboardData);
  if (files.length === 0 || !state.view) return;
  event.preventDefault(); // an image copied from a page brings its address as text too
  addImages(files);
}

/** Whether a drag carries files (not text being moved). */
const dragsFiles = (event) => !!event.dataTransfer && [...event.dataTransfer.types].includes('Files');

/** Image files dropped on the session's side of the page wait for the next query. */
export function watchDrops() {
  const target = $('main');
  const leave = () => target.classList.remove('dropping');
  target.addEventListener('dragover', (event) => {
    if (!dragsFiles(event) || !state.view) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    target.classList.add('dropping');
  });
  target.addEventListener('dragleave', (event) => {
    if (!target.contains(event.relatedTarget)) leave();
  });
  target.addEventListener('drop', (event) => {
    leave();
    if (!dragsFiles(event) || !state.view) return;
    event.preventDefault();
    addImages(filesOf(event.dataTransfer));
    $('input').focus();
  });
  // A file dropped anywhere else must not replace the page with itself.
  for (const type of ['dragover', 'drop']) {
    document.addEventListener(type, (event) => {
      if (dragsFiles(event)) event.preventDefault();
    });
  }
}

/** The Image button: pick files, which wait for the next query. */
export function watchAttachButton() {
  const picker = $('attach-input');
  $('attach').addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => {
    const files = [...picker.files];
    picker.value = '';
    addImages(files).then(() => $('input').focus());
  });
}

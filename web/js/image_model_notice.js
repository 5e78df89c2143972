// The composer's word on images and the chosen model: when images are attached and the model
// the message would go to does not take images (`input` without "image" in GET /api/models
// details), or takes fewer than are attached (`max_images`), a notice says so before Send,
// naming the model. The server refuses such a message anyway (422 model_cannot_see_images,
// too_many_images); this only saves the round trip. A server whose details carry no `input`
// gets no notice.

import { h } from './dom.js';

/** What to say about `count` images for model details `d`, or '' when all is well. */
export function imageModelText(d, count) {
  if (!count || !d || !Array.isArray(d.input)) return '';
  if (!d.input.includes('image')) {
    return `${d.name} cannot see images: a message with images is refused. Remove the images, or start a new chat with a model that takes images.`;
  }
  if (Number.isFinite(d.max_images) && count > d.max_images) {
    return `${d.name} takes at most ${d.max_images} image${d.max_images === 1 ? '' : 's'} per message; ${count} are attached.`;
  }
  return '';
}

export class ImageModelNotice {
  /**
   * `model()`: the name the next message goes to; `models()`: GET /api/models' answer;
   * `count()`: the images on the composer.
   */
  constructor({ model, models, count }) {
    this.model = model;
    this.models = models;
    this.count = count;
    this.el = h('p', { class: 'image-model-note', role: 'status' });
    this.el.hidden = true;
  }

  update() {
    const name = this.model();
    const d = (this.models()?.details || []).find((m) => m.name === name);
    const text = imageModelText(d, this.count());
    if (this.el.textContent !== text) this.el.textContent = text;
    this.el.hidden = !text;
  }
}

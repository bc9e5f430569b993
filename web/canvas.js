// High-DPI canvas sizing, shared by every view that draws on a canvas.

/**
 * Sizes `canvas` to `width` x `height` CSS pixels with one backing pixel per device pixel (so
 * it is sharp on high-DPI screens), resizing only when that changed, and returns its 2D
 * context scaled to CSS pixels and cleared.
 * @param {HTMLCanvasElement} canvas
 * @param {number} width in CSS pixels
 * @param {number} height in CSS pixels
 * @param {CanvasRenderingContext2D} [ctx] the canvas's context, when the caller keeps one
 * @returns {CanvasRenderingContext2D}
 */
export function fitCanvas(canvas, width, height, ctx = canvas.getContext("2d")) {
  const dpr = window.devicePixelRatio || 1;
  const pixelWidth = Math.round(width * dpr);
  const pixelHeight = Math.round(height * dpr);
  if (canvas.width !== pixelWidth || canvas.height !== pixelHeight) {
    canvas.width = pixelWidth;
    canvas.height = pixelHeight;
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return ctx;
}

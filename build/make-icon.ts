/**
 * Draws the app icon (build/resources/icon.png, 512x512 RGBA) with nothing but zlib: a rounded square
 * in the app's blue-to-violet gradient with a white paper plane, anti-aliased by supersampling.
 * electron-builder derives the Linux icon set, the Windows .ico and the macOS .icns from it.
 *
 *   npx tsx build/make-icon.ts [size] [out.png]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

type Rgba = [number, number, number, number];

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (CRC_TABLE[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A PNG file of `size`x`size` RGBA pixels (row-major, 4 bytes each). */
export function encodePng(size: number, rgba: Uint8Array): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  ihdr[10] = 0;
  ihdr[11] = 0;
  ihdr[12] = 0;
  const raw = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0; // filter: none
    Buffer.from(rgba.buffer, rgba.byteOffset + y * size * 4, size * 4).copy(raw, y * (size * 4 + 1) + 1);
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', new Uint8Array(0))]);
}

/** Signed distance to a rounded square centred in the unit square (negative inside). */
function roundedSquare(x: number, y: number, half: number, radius: number): number {
  const qx = Math.abs(x - 0.5) - (half - radius);
  const qy = Math.abs(y - 0.5) - (half - radius);
  const outside = Math.hypot(Math.max(qx, 0), Math.max(qy, 0));
  return outside + Math.min(Math.max(qx, qy), 0) - radius;
}

/** Whether (x, y) is inside the triangle abc. */
function inTriangle(x: number, y: number, a: [number, number], b: [number, number], c: [number, number]): boolean {
  const s = (p: [number, number], q: [number, number]) => (x - q[0]) * (p[1] - q[1]) - (p[0] - q[0]) * (y - q[1]);
  const d1 = s(a, b);
  const d2 = s(b, c);
  const d3 = s(c, a);
  const neg = d1 < 0 || d2 < 0 || d3 < 0;
  const pos = d1 > 0 || d2 > 0 || d3 > 0;
  return !(neg && pos);
}

const mix = (a: number, b: number, t: number) => a + (b - a) * t;

/** The colour of one sample point of the icon (unit coordinates, y down). */
function sample(x: number, y: number): Rgba {
  if (roundedSquare(x, y, 0.44, 0.1) > 0) return [0, 0, 0, 0];
  // Paper plane: a large wing and a darker fold, pointing up and to the right.
  const tip: [number, number] = [0.76, 0.26];
  const tail: [number, number] = [0.24, 0.5];
  const fold: [number, number] = [0.47, 0.57];
  const keel: [number, number] = [0.55, 0.76];
  if (inTriangle(x, y, tip, tail, fold)) return [255, 255, 255, 255];
  if (inTriangle(x, y, tip, fold, keel)) return [219, 228, 255, 255];
  // Background: #3b82f6 (top left) to #8b5cf6 (bottom right).
  const t = Math.min(1, Math.max(0, (x + y - 0.12) / 1.76));
  return [Math.round(mix(0x3b, 0x8b, t)), Math.round(mix(0x82, 0x5c, t)), Math.round(mix(0xf6, 0xf6, t)), 255];
}

/** Renders the icon with `ss`x`ss` samples per pixel. */
export function drawIcon(size: number, ss = 4): Uint8Array {
  const out = new Uint8Array(size * size * 4);
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      for (let sy = 0; sy < ss; sy++) {
        for (let sx = 0; sx < ss; sx++) {
          const [cr, cg, cb, ca] = sample((px + (sx + 0.5) / ss) / size, (py + (sy + 0.5) / ss) / size);
          // Premultiplied, so edges blend against transparency without dark fringes.
          r += cr * ca;
          g += cg * ca;
          b += cb * ca;
          a += ca;
        }
      }
      const i = (py * size + px) * 4;
      out[i] = a ? Math.round(r / a) : 0;
      out[i + 1] = a ? Math.round(g / a) : 0;
      out[i + 2] = a ? Math.round(b / a) : 0;
      out[i + 3] = Math.round(a / (ss * ss));
    }
  }
  return out;
}

const invokedDirectly = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  const size = Number(process.argv[2] ?? 512);
  if (!Number.isInteger(size) || size < 16 || size > 4096) throw new Error(`The size must be a whole number of pixels from 16 to 4096, not ${process.argv[2]}.`);
  const out = resolve(process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), 'resources', 'icon.png'));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, encodePng(size, drawIcon(size)));
  console.log(`Wrote ${out} (${size}x${size}).`);
}

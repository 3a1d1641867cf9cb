/**
 * A small SVG line chart for the benchmarks: one panel per measure, side by side, sharing the
 * x values (for example numbers of AgentCards). Plain SVG with no script or external asset, so
 * docs/ can embed it and any Markdown viewer shows it.
 */

export interface Panel {
  title: string;
  /** Series name -> one y value per x. */
  series: Record<string, number[]>;
}

const WIDTH = 300;
const HEIGHT = 220;
const PAD = { left: 48, right: 12, top: 28, bottom: 40 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v: number) =>
  Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);

function panel(xs: number[], p: Panel, xLabel: string, offsetX: number): string {
  const values = Object.values(p.series).flat().filter(Number.isFinite);
  const yMax = Math.max(...values, 0) * 1.1 || 1;
  const xMax = Math.max(...xs);
  const px = (x: number) => PAD.left + (x / xMax) * (WIDTH - PAD.left - PAD.right);
  const py = (y: number) => HEIGHT - PAD.bottom - (y / yMax) * (HEIGHT - PAD.top - PAD.bottom);
  const out: string[] = [`<g transform="translate(${offsetX},0)">`];
  out.push(`<text x="${WIDTH / 2}" y="16" text-anchor="middle" font-weight="bold">${escape(p.title)}</text>`);
  // Axes, with ticks at each x and at 0, half and full scale on y.
  out.push(
    `<line x1="${PAD.left}" y1="${py(0)}" x2="${WIDTH - PAD.right}" y2="${py(0)}" stroke="#333"/>`,
    `<line x1="${PAD.left}" y1="${py(0)}" x2="${PAD.left}" y2="${PAD.top}" stroke="#333"/>`,
  );
  for (const x of xs) {
    out.push(`<text x="${px(x)}" y="${py(0) + 14}" text-anchor="middle">${x}</text>`);
  }
  for (const y of [0, yMax / 2, yMax]) {
    out.push(`<text x="${PAD.left - 4}" y="${py(y) + 4}" text-anchor="end">${fmt(y)}</text>`);
  }
  out.push(`<text x="${WIDTH / 2}" y="${HEIGHT - 8}" text-anchor="middle">${escape(xLabel)}</text>`);
  Object.entries(p.series).forEach(([name, ys], i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const points = xs.map((x, j) => `${px(x).toFixed(1)},${py(ys[j] ?? 0).toFixed(1)}`).join(' ');
    out.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points}"/>`);
    xs.forEach((x, j) =>
      out.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(ys[j] ?? 0).toFixed(1)}" r="3" fill="${colour}"/>`),
    );
    out.push(
      `<text x="${PAD.left + 6}" y="${PAD.top + 12 + 14 * i}" fill="${colour}">${escape(name)}</text>`,
    );
  });
  out.push('</g>');
  return out.join('\n');
}

/** Panels side by side, each with its own y scale, over the same x values. */
export function lineChartsSvg(xs: number[], panels: Panel[], xLabel: string): string {
  const width = WIDTH * panels.length;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${HEIGHT}" viewBox="0 0 ${width} ${HEIGHT}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${HEIGHT}" fill="#fff"/>`,
    ...panels.map((p, i) => panel(xs, p, xLabel, i * WIDTH)),
    '</svg>',
    '',
  ].join('\n');
}

/**
 * Every custom property the console reads is defined (issue 24): a `var(--x)` in app/globals.css, in any
 * CSS Module, or in a component's source (an inline style, an SVG attribute, a colour constant) must name a
 * property some stylesheet declares (or an inline style sets). A fallback does not excuse it: `var(--surface-2,
 * #f6f7f9)` drew a light box in the dark theme because --surface-2 never existed. And the dark theme is
 * whole: every colour token of the light :root is given again under `prefers-color-scheme: dark`. And
 * spacing and type come from the scale: a font size is a `--text-*` token (or relative to its parent: em,
 * %), a padding, margin or gap in px is a `--space-*` token (1 px hairlines aside); and no module or
 * component writes a colour of its own (it would stay the same in the dark theme).
 * Stylesheets are read with postcss; no browser needed.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import postcss from "postcss";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

type File = { path: string; text: string };
const VAR = /var\(\s*(--[A-Za-z0-9_-]+)/g;
/** An inline style that sets a custom property: `{ "--bar-width": "40%" }`. */
const INLINE_SET = /["'](--[A-Za-z0-9_-]+)["']\s*:/g;

/** Every `var(--x)` whose --x nothing defines, as "file:line: --x". */
export function undefinedProperties(stylesheets: File[], sources: File[]): string[] {
  const defined = new Set<string>();
  const uses: { where: string; name: string }[] = [];
  for (const f of stylesheets) {
    postcss.parse(f.text, { from: f.path }).walkDecls((d) => {
      if (d.prop.startsWith("--")) defined.add(d.prop);
      for (const m of d.value.matchAll(VAR)) uses.push({ where: `${f.path}:${d.source?.start?.line ?? 0}`, name: m[1] });
    });
  }
  for (const f of sources) {
    for (const m of f.text.matchAll(INLINE_SET)) defined.add(m[1]);
    for (const m of f.text.matchAll(VAR)) {
      const line = f.text.slice(0, m.index).split("\n").length;
      uses.push({ where: `${f.path}:${line}`, name: m[1] });
    }
  }
  return uses.filter((u) => !defined.has(u.name)).map((u) => `${u.where}: ${u.name}`);
}

const COLOUR = /^(#[0-9a-f]{3,8}|rgba?\(|hsla?\(|oklch\(|color-mix\()/i;

/** The colour tokens of the light :root that the dark theme's :root does not give again. */
export function lightOnlyColours(globalsCss: string): string[] {
  const light = new Map<string, string>();
  const dark = new Set<string>();
  postcss.parse(globalsCss).walkRules(":root", (rule) => {
    const inDark = rule.parent?.type === "atrule" && /prefers-color-scheme:\s*dark/.test((rule.parent as postcss.AtRule).params);
    rule.walkDecls((d) => {
      if (!d.prop.startsWith("--")) return;
      if (inDark) dark.add(d.prop);
      else light.set(d.prop, d.value);
    });
  });
  return [...light].filter(([name, value]) => COLOUR.test(value.trim()) && !dark.has(name)).map(([name]) => name);
}

const SPACING = /^(padding|margin|gap|row-gap|column-gap)(-|$)/;

/** Font sizes and spacings written as loose values instead of the scale's tokens, as "file:line: decl". */
export function offScale(stylesheets: File[]): string[] {
  const out: string[] = [];
  for (const f of stylesheets) {
    postcss.parse(f.text, { from: f.path }).walkDecls((d) => {
      if (d.prop.startsWith("--")) return; // the tokens themselves
      const at = `${f.path}:${d.source?.start?.line ?? 0}: ${d.prop}: ${d.value}`;
      if (d.prop === "font-size" && !/^(var\(--text-[\w-]+\)|inherit|[\d.]+(em|%))$/.test(d.value.trim())) out.push(at);
      if (SPACING.test(d.prop) && [...d.value.matchAll(/(?<![\w.-])(\d+(?:\.\d+)?)px\b/g)].some((m) => Number(m[1]) > 1)) out.push(at);
    });
  }
  return out;
}

const COLOUR_LITERAL = /#[0-9a-f]{3,8}\b|\b(rgba?|hsla?|oklch)\(/gi;

/** Colours written as literals outside the tokens (a module's CSS, a component's string): each would ignore the dark theme. */
export function colourLiterals(stylesheets: File[], sources: File[]): string[] {
  const out: string[] = [];
  for (const f of stylesheets) {
    postcss.parse(f.text, { from: f.path }).walkDecls((d) => {
      if (d.prop.startsWith("--")) return; // the tokens themselves
      if (d.value.match(COLOUR_LITERAL)) out.push(`${f.path}:${d.source?.start?.line ?? 0}: ${d.prop}: ${d.value}`);
    });
  }
  for (const f of sources) {
    for (const m of f.text.matchAll(/["'`](#[0-9a-f]{3,8})["'`]/gi)) out.push(`${f.path}:${f.text.slice(0, m.index).split("\n").length}: ${m[1]}`);
  }
  return out;
}

const rel = (p: string) => path.relative(ROOT, p);
const read = (p: string): File => ({ path: rel(p), text: readFileSync(p, "utf8") });
const files = ["app", "components"].flatMap((d) => walk(path.join(ROOT, d)));
const stylesheets = files.filter((f) => f.endsWith(".css")).map(read);
const sources = files.filter((f) => /\.tsx?$/.test(f)).map(read);

describe("custom properties", () => {
  it("finds stylesheets and sources to check", () => {
    expect(stylesheets.map((f) => f.path)).toContain("app/globals.css");
    expect(stylesheets.length).toBeGreaterThan(20);
    expect(sources.some((f) => f.text.includes("var(--"))).toBe(true);
  });

  it("every var(--x) in the console's CSS and components names a property that is defined", () => {
    expect(undefinedProperties(stylesheets, sources)).toEqual([]);
  });

  it("the dark theme gives every light colour token again", () => {
    expect(lightOnlyColours(readFileSync(path.join(ROOT, "app/globals.css"), "utf8"))).toEqual([]);
  });

  it("font sizes and spacings come from the scale's tokens", () => {
    expect(offScale(stylesheets)).toEqual([]);
  });

  it("colours come from the tokens: no colour literal in a module or a component", () => {
    expect(colourLiterals(stylesheets, sources)).toEqual([]);
  });

  it("catches a misspelt property in a module, an inline style and a fallback, and a light-only colour", () => {
    const css: File[] = [
      { path: "g.css", text: ":root { --surface: #fff; --space-2: 8px; }\n@media (prefers-color-scheme: dark) { :root { --surface: #111; } }" },
      { path: "m.module.css", text: ".a { padding: var(--space-2); background: var(--surfce); }\n.b { color: var(--surface-2, #f6f7f9); }" },
    ];
    const tsx: File[] = [
      { path: "X.tsx", text: 'const s = { "--w": "40%" };\n<div style={{ width: "var(--w)", color: "var(--txt)" }} />' },
    ];
    expect(undefinedProperties(css, tsx)).toEqual(["m.module.css:1: --surfce", "m.module.css:2: --surface-2", "X.tsx:2: --txt"]);
    expect(
      offScale([{ path: "s.module.css", text: ".a { font-size: 13px; padding: var(--space-2) 10px; border-width: 2px; }\n.b { font-size: 0.9em; margin: 0 1px; gap: var(--space-1); }" }]),
    ).toEqual(["s.module.css:1: font-size: 13px", "s.module.css:1: padding: var(--space-2) 10px"]);
    expect(colourLiterals([{ path: "c.module.css", text: ".a { color: #2e7d4f; border-color: var(--ok); }" }], [{ path: "C.ts", text: 'export const C = { ok: "#16a34a" };' }])).toEqual([
      "c.module.css:1: color: #2e7d4f",
      "C.ts:1: #16a34a",
    ]);
    expect(lightOnlyColours(":root { --ok: #1f7a45; --bg: #fff; --space-1: 4px; }\n@media (prefers-color-scheme: dark) { :root { --bg: #000; } }")).toEqual(["--ok"]);
  });
});

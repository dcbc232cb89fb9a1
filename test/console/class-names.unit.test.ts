/**
 * Every class a console component names exists (issue 24): a CSS-module reference (`styles.card`) must be
 * a class of that module, and a class named by string (`className="button button--small"`, a map of
 * status classes, a `clsx(…)` argument) must be one of app/globals.css's primitives. Read with the
 * TypeScript compiler over the real sources, and the stylesheets with postcss; no browser needed.
 *
 * What counts as "naming a class": a JSX attribute `className` or `…ClassName`, a `clsx()` call, and
 * whatever those read: string literals, template literals, conditionals, a const's initializer, a map's
 * values, the return expressions of a function in the project. An expression it cannot follow (a string
 * computed at run time) fails the test, so class names stay checkable. A parameter named `className` or
 * `…ClassName` is passed through: its value is checked where the component is used.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import postcss from "postcss";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SOURCE_DIRS = ["components", "app"];

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** The classes a stylesheet defines, and the global classes it refers to through `:global(.x)`. */
export function stylesheetClasses(css: string, from: string): { defined: Set<string>; globalRefs: Set<string> } {
  const defined = new Set<string>();
  const globalRefs = new Set<string>();
  const CLASS = /\.(-?[A-Za-z_][\w-]*)/g;
  postcss.parse(css, { from }).walkRules((rule) => {
    if (rule.parent?.type === "atrule" && /keyframes$/i.test((rule.parent as postcss.AtRule).name)) return;
    let selector = rule.selector;
    selector = selector.replace(/:global\(([^)]*)\)/g, (_m, inner: string) => {
      for (const m of inner.matchAll(CLASS)) globalRefs.add(m[1]);
      return "";
    });
    selector = selector.replace(/\[[^\]]*\]/g, ""); // attribute selectors may hold dots in values
    for (const m of selector.matchAll(CLASS)) defined.add(m[1]);
  });
  return { defined, globalRefs };
}

const globals = stylesheetClasses(readFileSync(path.join(ROOT, "app/globals.css"), "utf8"), "app/globals.css").defined;

const sources = SOURCE_DIRS.flatMap((d) => walk(path.join(ROOT, d))).filter((f) => /\.tsx?$/.test(f) && !f.endsWith(".d.ts"));
const cssModules = SOURCE_DIRS.flatMap((d) => walk(path.join(ROOT, d))).filter((f) => f.endsWith(".module.css"));

type Finding = { where: string; problem: string };

/** Checks one program's sources; the findings name the file, the line and what is wrong. */
function checkSources(files: string[]): Finding[] {
  const program = ts.createProgram(files, {
    jsx: ts.JsxEmit.ReactJSX,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    // Each file alone (its imports unresolved) keeps this fast; what a file imports is checked where it is defined.
    noResolve: true,
    noLib: true,
    types: [],
    baseUrl: ROOT,
    paths: { "@/*": ["./*"] },
  });
  const checker = program.getTypeChecker();
  const findings: Finding[] = [];
  const moduleClasses = new Map<string, Set<string>>();

  const classesOf = (cssPath: string): Set<string> => {
    let set = moduleClasses.get(cssPath);
    if (!set) {
      set = stylesheetClasses(readFileSync(cssPath, "utf8"), cssPath).defined;
      moduleClasses.set(cssPath, set);
    }
    return set;
  };

  for (const file of files) {
    const sf = program.getSourceFile(file);
    if (!sf) continue;
    const rel = path.relative(ROOT, file);
    const at = (n: ts.Node) => `${rel}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`;
    const report = (n: ts.Node, problem: string): void => void findings.push({ where: at(n), problem });

    // The CSS modules this file imports: local name → the module's classes.
    const modules = new Map<ts.Symbol, { name: string; classes: Set<string> }>();
    for (const st of sf.statements) {
      if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier)) continue;
      const spec = st.moduleSpecifier.text;
      if (!spec.endsWith(".module.css")) continue;
      const def = st.importClause?.name;
      if (!def) {
        report(st, `import of ${spec} without a default name`);
        continue;
      }
      const cssPath = spec.startsWith("@/") ? path.join(ROOT, spec.slice(2)) : path.resolve(path.dirname(file), spec);
      const sym = checker.getSymbolAtLocation(def);
      if (sym) modules.set(sym, { name: spec, classes: classesOf(cssPath) });
    }

    const moduleOf = (e: ts.Expression) => {
      if (!ts.isIdentifier(e)) return undefined;
      const sym = checker.getSymbolAtLocation(e);
      return sym ? modules.get(sym) : undefined;
    };

    // 1. Every use of an imported module: a property that exists.
    const visitModuleUses = (n: ts.Node) => {
      if (ts.isIdentifier(n) && !ts.isImportClause(n.parent)) {
        const mod = moduleOf(n);
        if (mod) {
          const p = n.parent;
          if (ts.isPropertyAccessExpression(p) && p.expression === n) {
            if (!mod.classes.has(p.name.text)) report(p, `${mod.name} has no class .${p.name.text}`);
          } else if (ts.isElementAccessExpression(p) && p.expression === n && ts.isStringLiteralLike(p.argumentExpression)) {
            if (!mod.classes.has(p.argumentExpression.text)) report(p, `${mod.name} has no class .${p.argumentExpression.text}`);
          } else {
            report(n, `${mod.name} is used other than by a named class (${p.getText(sf).slice(0, 60)}): the class cannot be checked`);
          }
        }
      }
      ts.forEachChild(n, visitModuleUses);
    };
    visitModuleUses(sf);

    // 2. Class names given as strings, wherever a className is formed.
    const seen = new Set<ts.Node>();
    const checkToken = (n: ts.Node, token: string, partial: "prefix" | "suffix" | null) => {
      if (!token) return;
      const ok =
        partial === "prefix"
          ? [...globals].some((g) => g.startsWith(token))
          : partial === "suffix"
            ? [...globals].some((g) => g.endsWith(token))
            : globals.has(token);
      if (!ok) report(n, `class "${token}${partial === "prefix" ? "…" : ""}" is not defined in app/globals.css (a module class is referenced as styles.x)`);
    };
    const checkText = (n: ts.Node, text: string, openStart: boolean, openEnd: boolean) => {
      const parts = text.split(/\s+/);
      parts.forEach((tok, i) => {
        const touchesStart = i === 0 && openStart && tok !== "";
        const touchesEnd = i === parts.length - 1 && openEnd && tok !== "";
        if (touchesStart && touchesEnd) return; // a fragment inside a substitution's neighbours: checked by the substitution's type
        checkToken(n, tok, touchesEnd ? "prefix" : touchesStart ? "suffix" : null);
      });
    };
    const declarationValue = (sym: ts.Symbol | undefined): ts.Node | undefined => {
      const target = sym && sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
      const decl = target?.valueDeclaration ?? target?.declarations?.[0];
      if (!decl) return undefined;
      if (ts.isVariableDeclaration(decl)) return decl.initializer;
      if (ts.isFunctionDeclaration(decl) || ts.isArrowFunction(decl) || ts.isFunctionExpression(decl)) return decl;
      if (ts.isParameter(decl) || ts.isBindingElement(decl)) return decl;
      if (ts.isPropertyAssignment(decl)) return decl.initializer;
      return undefined;
    };
    const passedThrough = (decl: ts.Node) => {
      const name = (decl as ts.ParameterDeclaration | ts.BindingElement).name;
      return ts.isIdentifier(name) && /classname$/i.test(name.text);
    };
    const check = (e: ts.Node): void => {
      if (seen.has(e)) return;
      seen.add(e);
      if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isNonNullExpression(e)) return check(e.expression);
      if (ts.isStringLiteralLike(e)) return checkText(e, e.text, false, false);
      if (ts.isTemplateExpression(e)) {
        checkText(e, e.head.text, false, true);
        e.templateSpans.forEach((span, i) => {
          const last = i === e.templateSpans.length - 1;
          checkText(e, span.literal.text, true, !last);
          const glued = /\S$/.test(i === 0 ? e.head.text : e.templateSpans[i - 1].literal.text) || /^\S/.test(span.literal.text);
          if (!glued) check(span.expression);
          else checkGlued(span.expression);
        });
        return;
      }
      if (ts.isConditionalExpression(e)) {
        check(e.whenTrue);
        return check(e.whenFalse);
      }
      if (ts.isBinaryExpression(e)) {
        const op = e.operatorToken.kind;
        if (op === ts.SyntaxKind.AmpersandAmpersandToken) return check(e.right);
        if (op === ts.SyntaxKind.BarBarToken || op === ts.SyntaxKind.QuestionQuestionToken) {
          check(e.left);
          return check(e.right);
        }
        if (op === ts.SyntaxKind.PlusToken) return report(e, "class names joined with +: use clsx() or a template");
      }
      if (ts.isCallExpression(e)) {
        if (ts.isIdentifier(e.expression) && e.expression.text === "clsx") return e.arguments.forEach(check);
        const fn = declarationValue(checker.getSymbolAtLocation(e.expression));
        if (fn && (ts.isFunctionDeclaration(fn) || ts.isArrowFunction(fn) || ts.isFunctionExpression(fn))) return checkReturns(fn);
        return report(e, `cannot follow the class names of ${e.getText(sf).slice(0, 60)}`);
      }
      if (ts.isArrayLiteralExpression(e)) return e.elements.forEach(check);
      if (ts.isObjectLiteralExpression(e)) {
        for (const p of e.properties) if (ts.isPropertyAssignment(p)) check(p.initializer);
        return;
      }
      if (ts.isPropertyAccessExpression(e) && moduleOf(e.expression)) return; // checked in 1.
      if (ts.isElementAccessExpression(e) || ts.isPropertyAccessExpression(e)) {
        if (moduleOf(e.expression)) return;
        // MAP[key] or MAP.key: the map's values.
        const sym = checker.getSymbolAtLocation(ts.isElementAccessExpression(e) ? e.expression : e.expression);
        const value = declarationValue(sym);
        if (value && !ts.isParameter(value) && !ts.isBindingElement(value)) return check(value);
        if (value && passedThrough(value)) return;
        if (literalTypes(e)) return;
        return report(e, `cannot follow the class names of ${e.getText(sf).slice(0, 60)}`);
      }
      if (ts.isIdentifier(e)) {
        if (e.text === "undefined") return;
        const value = declarationValue(checker.getSymbolAtLocation(e));
        if (value && (ts.isParameter(value) || ts.isBindingElement(value))) {
          if (passedThrough(value)) return;
          if (value.initializer && !passedThrough(value)) check(value.initializer);
          if (literalTypes(e)) return;
          return report(e, `${e.text} is a parameter: name it …ClassName to pass a class through, or give it literal types`);
        }
        if (value) return check(value);
        if (literalTypes(e)) return;
        return report(e, `cannot follow the class names of ${e.text}`);
      }
      if (e.kind === ts.SyntaxKind.NullKeyword || e.kind === ts.SyntaxKind.FalseKeyword || e.kind === ts.SyntaxKind.TrueKeyword) return;
      if (literalTypes(e)) return;
      report(e, `cannot follow the class names of ${e.getText(sf).slice(0, 60)}`);
    };
    /** An expression glued to text in a template (`status--${tone}`): its literal types, each with the text around it. */
    const checkGlued = (e: ts.Expression) => {
      const t = checker.getTypeAtLocation(e);
      const lits = (t.isUnion() ? t.types : [t]).filter((x) => x.isStringLiteral()) as ts.StringLiteralType[];
      if (lits.length === 0) return report(e, `a class name is built from ${e.getText(sf).slice(0, 60)}, whose values are not known: use a map of classes`);
      const tpl = e.parent.parent as ts.TemplateExpression;
      const i = tpl.templateSpans.findIndex((s) => s.expression === e);
      const before = (i === 0 ? tpl.head.text : tpl.templateSpans[i - 1].literal.text).split(/\s+/).pop() ?? "";
      const after = tpl.templateSpans[i].literal.text.split(/\s+/)[0] ?? "";
      for (const l of lits) checkText(e, before + l.value + after, false, false);
    };
    /** True when the expression's type is only string literals (and nothing): each is checked. */
    const literalTypes = (e: ts.Node): boolean => {
      const t = checker.getTypeAtLocation(e);
      const members = t.isUnion() ? t.types : [t];
      const strings = members.filter((x) => !(x.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null | ts.TypeFlags.BooleanLiteral)));
      if (strings.length === 0 || !strings.every((x) => x.isStringLiteral())) return false;
      for (const s of strings as ts.StringLiteralType[]) checkText(e, s.value, false, false);
      return true;
    };
    const checkReturns = (fn: ts.FunctionLikeDeclaration) => {
      if (fn.body && !ts.isBlock(fn.body)) return check(fn.body);
      const visit = (n: ts.Node) => {
        if (ts.isReturnStatement(n) && n.expression) check(n.expression);
        if (!ts.isFunctionLike(n) || n === fn) ts.forEachChild(n, visit);
      };
      if (fn.body) ts.forEachChild(fn.body, visit);
    };

    const visitClassNames = (n: ts.Node) => {
      if (ts.isJsxAttribute(n) && /classname$/i.test(n.name.getText(sf)) && n.initializer) {
        if (ts.isStringLiteral(n.initializer)) check(n.initializer);
        else if (ts.isJsxExpression(n.initializer) && n.initializer.expression) check(n.initializer.expression);
      }
      if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === "clsx") n.arguments.forEach(check);
      // A default for a …ClassName parameter is a class named here.
      if ((ts.isParameter(n) || ts.isBindingElement(n)) && ts.isIdentifier(n.name) && /classname$/i.test(n.name.text) && n.initializer) check(n.initializer);
      ts.forEachChild(n, visitClassNames);
    };
    visitClassNames(sf);
  }
  return findings;
}

describe("class names in the console's components", () => {
  it("globals.css keeps only the documented primitives", () => {
    // Tokens, resets and five primitives (see its header); a screen's classes live in its CSS Module.
    expect([...globals].sort()).toEqual(
      [
        "button", "button--block", "button--danger", "button--primary", "button--small",
        "input", "input--duration", "input--small", "input--wide",
        "status", "status--error", "status--off", "status--ok", "status--warn",
        "muted", "small", "mono", "warn-text", "visually-hidden",
      ].sort(),
    );
  });

  it("every CSS module's :global(.x) names a class of globals.css (or of recharts)", () => {
    const wrong = cssModules.flatMap((f) =>
      [...stylesheetClasses(readFileSync(f, "utf8"), f).globalRefs]
        .filter((c) => !globals.has(c) && !c.startsWith("recharts-")) // recharts draws its own classes
        .map((c) => `${path.relative(ROOT, f)}: .${c}`),
    );
    expect(wrong).toEqual([]);
  });

  it("every class a component names exists", () => {
    const findings = checkSources(sources);
    expect(findings.map((f) => `${f.where}: ${f.problem}`)).toEqual([]);
  }, 120_000);

  it("catches a module class, a global class and a map value that do not exist", async () => {
    // The checker itself, on a scratch component beside the real ones (so its imports resolve).
    const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
    const dir = mkdtempSync(path.join(ROOT, "components", ".class-check-"));
    try {
      writeFileSync(path.join(dir, "x.module.css"), ".real { color: red; }\n.other :global(.button) { color: blue; }\n");
      const file = path.join(dir, "X.tsx");
      writeFileSync(
        file,
        [
          'import { clsx } from "clsx";',
          'import styles from "./x.module.css";',
          'const TONE = { ok: "status--ok", bad: "status--nope" } as const;',
          "export function X({ tone, on }: { tone: keyof typeof TONE; on: boolean }) {",
          "  return (",
          "    <div className={styles.real}>",
          "      <span className={styles.missing} />",
          '      <span className="button buton--small" />',
          "      <span className={`status ${TONE[tone]}`} />",
          '      <span className={clsx("mono", on && "monospace")} />',
          "    </div>",
          "  );",
          "}",
        ].join("\n"),
      );
      const problems = checkSources([file]).map((f) => f.problem);
      expect(problems).toEqual(
        expect.arrayContaining([
          "./x.module.css has no class .missing",
          expect.stringContaining('"buton--small"'),
          expect.stringContaining('"status--nope"'),
          expect.stringContaining('"monospace"'),
        ]),
      );
      expect(problems).toHaveLength(4);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

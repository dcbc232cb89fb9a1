/**
 * The dead-letter page's payload as shown (pretty-printed when it is JSON) and as downloaded (exactly the
 * stored bytes). The stored bytes are never changed: pretty-printing is a view. Pure.
 */

/**
 * The payload text for display: indented when it parses as JSON, else as it is. Big integers stay as
 * written: the text is re-indented token by token, never parsed into numbers.
 */
export function prettyPayload(text: string): { text: string; json: boolean } {
  try {
    JSON.parse(text);
  } catch {
    return { text, json: false };
  }
  return { text: indentJson(text), json: true };
}

/** Re-indents valid JSON text by its tokens (strings and numbers copied verbatim). */
export function indentJson(text: string, indent = "  "): string {
  let out = "";
  let depth = 0;
  let i = 0;
  const newline = () => "\n" + indent.repeat(depth);
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if (c === "{" || c === "[") {
      // An empty object or array stays on one line.
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j])) j++;
      if (text[j] === (c === "{" ? "}" : "]")) {
        out += c + text[j];
        i = j + 1;
        continue;
      }
      depth++;
      out += c + newline();
    } else if (c === "}" || c === "]") {
      depth--;
      out += newline() + c;
    } else if (c === ",") {
      out += "," + newline();
    } else if (c === ":") {
      out += ": ";
    } else {
      out += c;
    }
    i++;
  }
  return out;
}

/** The stored bytes of a payload from its base64 (what the download holds). */
export function payloadBytes(base64: string): Uint8Array {
  const bin = atob(base64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

/** A file name for the download: the event id made safe, with an extension from the content type. */
export function downloadName(eventId: string, contentType: string): string {
  const base = eventId.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80) || "payload";
  const type = contentType.split(";")[0].trim().toLowerCase();
  const ext = type.endsWith("json") ? "json" : type.endsWith("xml") ? "xml" : type === "application/x-www-form-urlencoded" ? "txt" : type.startsWith("text/") ? "txt" : "bin";
  return `${base}.${ext}`;
}

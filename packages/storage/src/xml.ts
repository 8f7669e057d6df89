/**
 * A small, strict XML reader for the S3 API's answers (ListObjectsV2, multipart uploads, errors).
 * Node has no DOMParser and the answers are simple: elements, text, entities, CDATA, comments and
 * a prolog. Attributes are parsed (so quoted `>` cannot confuse the reader) and then dropped.
 * Malformed input throws; it is never guessed at.
 */

/** One element: its name (namespace prefix kept), child elements and concatenated text. */
export interface XmlElement {
  name: string;
  children: XmlElement[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g, (whole, body: string) => {
    if (body.startsWith("#x")) return String.fromCodePoint(Number.parseInt(body.slice(2), 16));
    if (body.startsWith("#")) return String.fromCodePoint(Number.parseInt(body.slice(1), 10));
    const v = ENTITIES[body];
    if (v === undefined) throw new Error(`unknown XML entity ${whole}`);
    return v;
  });
}

/** Parses a document and returns its root element. */
export function parseXml(xml: string): XmlElement {
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let i = 0;
  const fail = (why: string): never => {
    throw new Error(`malformed XML at offset ${i}: ${why}`);
  };
  const skipPast = (marker: string, what: string) => {
    const j = xml.indexOf(marker, i);
    if (j < 0) fail(`unterminated ${what}`);
    const start = i;
    i = j + marker.length;
    return xml.slice(start, j);
  };
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    const textEnd = lt < 0 ? xml.length : lt;
    if (textEnd > i) {
      const text = xml.slice(i, textEnd);
      const top = stack[stack.length - 1];
      if (top !== undefined) top.text += decodeEntities(text);
      else if (text.trim() !== "") fail("text outside the root element");
      i = textEnd;
      continue;
    }
    if (xml.startsWith("<?", i)) {
      i += 2;
      skipPast("?>", "processing instruction");
    } else if (xml.startsWith("<!--", i)) {
      i += 4;
      skipPast("-->", "comment");
    } else if (xml.startsWith("<![CDATA[", i)) {
      i += 9;
      const data = skipPast("]]>", "CDATA section");
      const top = stack[stack.length - 1] ?? fail("CDATA outside the root element");
      top.text += data;
    } else if (xml.startsWith("<!", i)) {
      fail("DOCTYPE and other declarations are not accepted");
    } else if (xml.startsWith("</", i)) {
      i += 2;
      const name = skipPast(">", "end tag").trim();
      const open = stack.pop() ?? fail(`end tag </${name}> without a start tag`);
      if (open.name !== name) fail(`end tag </${name}> closes <${open.name}>`);
    } else {
      i += 1;
      // Scan the start tag honouring quoted attribute values.
      const start = i;
      let quote = "";
      while (i < xml.length) {
        const c = xml[i];
        if (quote) {
          if (c === quote) quote = "";
        } else if (c === '"' || c === "'") quote = c;
        else if (c === ">") break;
        i++;
      }
      if (i >= xml.length) fail("unterminated start tag");
      let body = xml.slice(start, i);
      i++;
      const selfClosing = body.endsWith("/");
      if (selfClosing) body = body.slice(0, -1);
      const name = /^[^\s/>]+/.exec(body)?.[0] ?? fail("start tag without a name");
      const el: XmlElement = { name, children: [], text: "" };
      const parent = stack[stack.length - 1];
      if (parent !== undefined) parent.children.push(el);
      else if (root === undefined) root = el;
      else fail("a second root element");
      if (!selfClosing) stack.push(el);
    }
  }
  if (stack.length > 0) fail(`unclosed element <${stack[stack.length - 1]!.name}>`);
  return root ?? fail("no root element");
}

/** The first child element named `name` (ignoring any namespace prefix), if any. */
export function child(el: XmlElement, name: string): XmlElement | undefined {
  return el.children.find((c) => localName(c.name) === name);
}

/** Every child element named `name`. */
export function childrenNamed(el: XmlElement, name: string): XmlElement[] {
  return el.children.filter((c) => localName(c.name) === name);
}

/** The text of the first child named `name`, or `undefined`. */
export function childText(el: XmlElement, name: string): string | undefined {
  return child(el, name)?.text;
}

function localName(name: string): string {
  const colon = name.indexOf(":");
  return colon < 0 ? name : name.slice(colon + 1);
}

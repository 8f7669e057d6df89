import assert from "node:assert/strict";
import { test } from "node:test";
import { childrenNamed, childText, parseXml } from "../src/xml.js";

test("a ListObjectsV2 answer with a prolog, namespace, entities and CDATA is read", () => {
  const doc = parseXml(`<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment with <tags> -->
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><IsTruncated>true</IsTruncated>
  <Contents><Key>a &amp; b &lt;c&gt; &#233;&#x20AC;.bin</Key><Size>3</Size></Contents>
  <Contents><Key><![CDATA[x<y>&z]]></Key></Contents>
  <Contents><Key attr="quoted > bracket">p/q</Key></Contents>
  <Empty/>
  <NextContinuationToken>tok/+=</NextContinuationToken>
</ListBucketResult>`);
  assert.equal(doc.name, "ListBucketResult");
  assert.deepEqual(
    childrenNamed(doc, "Contents").map((c) => childText(c, "Key")),
    ["a & b <c> é€.bin", "x<y>&z", "p/q"],
  );
  assert.equal(childText(doc, "IsTruncated"), "true");
  assert.equal(childText(doc, "NextContinuationToken"), "tok/+=");
  assert.equal(childText(doc, "Empty"), "");
});

for (const [name, xml] of [
  ["mismatched tags", "<a><b></a></b>"],
  ["an unclosed element", "<a><b></b>"],
  ["two roots", "<a/><b/>"],
  ["text outside the root", "junk<a/>"],
  ["an unknown entity", "<a>&nbsp;</a>"],
  ["a DOCTYPE (entity expansion is never attempted)", '<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>'],
  ["an unterminated comment", "<a><!-- </a>"],
  ["an empty document", "  "],
] as const) {
  test(`malformed XML is refused: ${name}`, () => {
    assert.throws(() => parseXml(xml), /malformed XML|unknown XML entity/);
  });
}

// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "./markdown";

describe("rendering untrusted Markdown", () => {
  it("renders Markdown", () => {
    const html = renderMarkdown("# Title\n\nSome *text* and a [link](https://example.com/a).");
    expect(html).toContain("<h1>Title</h1>");
    expect(html).toContain("<em>text</em>");
    expect(html).toContain('href="https://example.com/a"');
    expect(html).toContain('rel="noopener noreferrer nofollow"');
    expect(html).toContain('target="_blank"');
  });

  it("shows raw HTML as text and drops script URLs", () => {
    const html = renderMarkdown(
      '<img src=x onerror="alert(1)"><script>alert(2)</script>\n\n[click](javascript:alert(3))',
    );
    const dom = document.createElement("div");
    dom.innerHTML = html;
    expect(dom.querySelectorAll("img, script")).toHaveLength(0);
    const attributes = [...dom.querySelectorAll("*")].flatMap((element) => [...element.attributes]);
    expect(attributes.filter((attribute) => attribute.name.startsWith("on"))).toEqual([]);
    expect(attributes.filter((attribute) => /javascript:/i.test(attribute.value))).toEqual([]);
    expect(dom.textContent).toContain("<script>alert(2)</script>");
  });

  it("does not load images: they become links", () => {
    const html = renderMarkdown("![a tracking pixel](https://tracker.example/p.gif)");
    expect(html).not.toContain("<img");
    expect(html).toContain('href="https://tracker.example/p.gif"');
    expect(html).toContain("[image: a tracking pixel]");
  });
});

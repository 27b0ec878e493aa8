// Markdown of fetched pages is untrusted: raw HTML in it is shown as text, the rendered HTML is sanitised with
// DOMPurify, links open in a new tab without a referrer, and images are not loaded (a page could use them to
// track who reads the playground); they become links to the image instead.

import DOMPurify from "dompurify";
import { Marked } from "marked";

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    html({ text }) {
      return escapeHtml(text);
    },
    image({ href, title, text }) {
      const label = text || title || "image";
      if (!href) return escapeHtml(`[${label}]`);
      return `<a href="${escapeHtml(href)}" class="md-image">[image: ${escapeHtml(label)}]</a>`;
    },
  },
});

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

let hooked = false;

function purifier(): typeof DOMPurify {
  if (!hooked) {
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A") {
        const href = node.getAttribute("href") ?? "";
        if (!/^(https?:|mailto:|#)/i.test(href)) node.removeAttribute("href");
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
    hooked = true;
  }
  return DOMPurify;
}

export function renderMarkdown(markdown: string): string {
  const html = marked.parse(markdown) as string;
  return purifier().sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: [
      "img",
      "style",
      "form",
      "input",
      "button",
      "textarea",
      "select",
      "video",
      "audio",
      "source",
      "picture",
    ],
    FORBID_ATTR: ["style", "srcset"],
    ADD_ATTR: ["target"],
  });
}

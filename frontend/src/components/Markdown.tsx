import { useEffect, useState } from "react";

// The renderer (marked + DOMPurify) is loaded on first use: only fetch results need it.
const renderer = () => import("../lib/markdown");

/** A fetched page's Markdown, rendered (sanitised) or as its raw text. */
export function MarkdownView({ markdown }: { markdown: string }) {
  const [raw, setRaw] = useState(false);
  const [html, setHtml] = useState<string | null>(null);

  useEffect(() => {
    if (raw) return;
    let active = true;
    void renderer().then(({ renderMarkdown }) => {
      if (active) setHtml(renderMarkdown(markdown));
    });
    return () => {
      active = false;
    };
  }, [markdown, raw]);

  return (
    <div className="markdown-view">
      <div className="segmented small" role="group" aria-label="Markdown view">
        <button type="button" aria-pressed={!raw} onClick={() => setRaw(false)}>
          Rendered
        </button>
        <button type="button" aria-pressed={raw} onClick={() => setRaw(true)}>
          Raw Markdown
        </button>
      </div>
      {raw ? (
        <pre className="code-block markdown-raw">{markdown}</pre>
      ) : html === null ? (
        <p className="muted">Rendering…</p>
      ) : (
        // Sanitised by DOMPurify in renderMarkdown (raw HTML escaped, no images, safe links only).
        <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />
      )}
    </div>
  );
}

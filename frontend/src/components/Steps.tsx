import { useState } from "react";
import { formatBytes, formatDateTime, formatDuration } from "../lib/format";
import type { LiveStep } from "../lib/liveRun";
import { Modal } from "./Modal";

const LONG_OBSERVATION = 600;

export function Observation({ text, truncated, full }: { text: string; truncated?: boolean; full?: boolean }) {
  const long = text.length > LONG_OBSERVATION || text.split("\n").length > 12;
  const [open, setOpen] = useState(Boolean(full) || !long);
  if (!text) return <p className="muted small">No observation.</p>;
  return (
    <div className={`observation${open ? " open" : ""}`}>
      <pre className="code-block">{open ? text : text.slice(0, LONG_OBSERVATION)}</pre>
      {truncated && <p className="hint">Cut at 2,000 characters while live; the run detail has all of it.</p>}
      {long && (
        <button type="button" className="link-button" onClick={() => setOpen((value) => !value)} aria-expanded={open}>
          {open ? "Show less" : `Show all (${text.length.toLocaleString()} characters)`}
        </button>
      )}
    </div>
  );
}

export function ScreenshotThumb({ src, label }: { src: string; label: string }) {
  const [zoom, setZoom] = useState(false);
  const [actual, setActual] = useState(false);
  return (
    <>
      <button type="button" className="thumb" onClick={() => setZoom(true)} aria-label={`Zoom ${label}`}>
        <img src={src} alt={label} loading="lazy" />
      </button>
      {zoom && (
        <Modal title={label} onClose={() => setZoom(false)} wide className="screenshot-modal">
          <div className="modal-toolbar">
            <div className="segmented small" role="group" aria-label="Zoom">
              <button type="button" aria-pressed={!actual} onClick={() => setActual(false)}>
                Fit
              </button>
              <button type="button" aria-pressed={actual} onClick={() => setActual(true)}>
                Actual size
              </button>
            </div>
            <a className="button small" href={src} target="_blank" rel="noreferrer">
              Open image
            </a>
          </div>
          <div className={`zoom-frame${actual ? " actual" : ""}`}>
            <img src={src} alt={label} onClick={() => setActual((value) => !value)} />
          </div>
        </Modal>
      )}
    </>
  );
}

export function StepCard({ step, live }: { step: LiveStep; live?: boolean }) {
  return (
    <li
      className={`step${live ? " arriving" : ""}`}
      data-step-index={step.index}
      aria-label={`Step ${step.index + 1}: ${step.action}`}
    >
      <div className="step-marker" aria-hidden="true">
        {step.index + 1}
      </div>
      <div className="step-body">
        <div className="step-head">
          <span className="step-action">{step.action || "…"}</span>
          {step.url && (
            <span className="step-url" title={step.url}>
              {step.url}
            </span>
          )}
          <span className="step-meta">
            {step.durationMs !== null && <span>{formatDuration(step.durationMs)}</span>}
            {step.at && <time dateTime={step.at}>{formatDateTime(step.at)}</time>}
          </span>
        </div>
        <div className={`step-content${step.screenshot ? " with-shot" : ""}`}>
          <Observation text={step.observation} truncated={live && step.truncated} />
          {step.screenshot && <ScreenshotThumb src={step.screenshot} label={`Screenshot of step ${step.index + 1}`} />}
        </div>
        {step.page && (
          <p className="step-page">
            <a href={step.page.href} download>
              Archived page
            </a>{" "}
            <span className="muted">
              HTTP {step.page.status}, {formatBytes(step.page.bytes)}
              {step.page.truncated ? ", cut at ARCHIVE_MAX_BYTES" : ""}
            </span>
          </p>
        )}
      </div>
    </li>
  );
}

export function StepList({ steps, live, emptyText }: { steps: LiveStep[]; live?: boolean; emptyText: string }) {
  if (steps.length === 0) return <p className="muted steps-empty">{emptyText}</p>;
  return (
    <ol className="steps" aria-label="Steps">
      {steps.map((step) => (
        <StepCard key={step.index} step={step} live={live} />
      ))}
    </ol>
  );
}

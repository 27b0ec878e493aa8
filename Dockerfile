# syntax=docker/dockerfile:1
# The web-data service in one image: the playground UI built in a Node stage, then Python with Debian's headless
# Chromium (Playwright cannot download its own browser on closed networks, and Debian's is patched regularly).

# Node 24: the active LTS line (supported into 2028).
FROM node:24-bookworm-slim AS ui
WORKDIR /ui
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SERVICE_HOST=0.0.0.0 \
    SERVICE_PORT=3470 \
    SERVICE_DATA_DIR=/data \
    BROWSER_EXECUTABLE=/usr/bin/chromium

# Chromium and fonts from Debian: versions follow the distribution's security updates, so they are not pinned.
# tini is the container's init (below).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium fonts-liberation fonts-noto-color-emoji tini \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin app \
    && mkdir -p /data \
    && chown app:app /data

WORKDIR /app
# Every package pinned with its hashes (make lock writes the file from requirements.txt).
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock
# The code belongs to root and is read-only to the app user: a compromised process cannot rewrite it.
COPY . .
COPY --from=ui /ui/dist frontend/dist
RUN chmod -R a-w,a+rX /app

USER 10001:10001
VOLUME ["/data"]
EXPOSE 3470
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:3470/api/health', timeout=4).status != 200)"]
# tini as PID 1 passes `docker stop`'s SIGTERM on to serve and reaps the processes a dead worker's Chromium leaves
# behind (serve as PID 1 would collect them as zombies).
ENTRYPOINT ["/usr/bin/tini", "--"]
# serve applies migrations at start, then runs daphne, the workers and the reaper; --grace lets running runs
# finish on `docker stop` (compose gives it stop_grace_period).
CMD ["python", "manage.py", "serve", "--grace", "300"]

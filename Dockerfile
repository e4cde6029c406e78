# recloop API image: small (slim base, CPU-only torch wheel, no build tools left), runs as non-root.
# Build: docker build -t recloop .   Run with docker compose (see docs/deploy.md).
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml setup.py README.md alembic.ini ./
COPY cli ./cli
COPY app ./app
COPY lab ./lab
COPY graph ./graph
COPY steering ./steering
COPY llm ./llm
COPY recmodels ./recmodels
COPY postgres ./postgres
COPY migrations ./migrations
COPY recloop ./recloop
# The CPU wheel index keeps torch at ~200 MB instead of a multi-GB CUDA build.
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --extra-index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
 && /opt/venv/bin/pip install .

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 recloop && mkdir /data && chown recloop /data
COPY --from=build /opt/venv /opt/venv
# alembic.ini sits next to the installed `migrations` package, where app/db/migrate.py looks for it
# (the wheel keeps the server's packages under recloop/_server/: see setup.py).
COPY --from=build /src/alembic.ini /opt/venv/lib/python3.11/site-packages/recloop/_server/alembic.ini
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    RECLOOP_DATA_DIR=/data \
    RECLOOP_HOST=0.0.0.0 \
    RECLOOP_PORT=8000
USER 10001
WORKDIR /home/recloop
VOLUME ["/data"]
EXPOSE 8000
# The start period covers a standalone container's first start, which trains the models itself
# (minutes; compose and Kubernetes run `recloop prepare` first): failures inside it do not count.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30m --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2)"]
CMD ["recloop", "serve", "--no-migrate"]

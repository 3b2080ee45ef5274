# The Toxiproxy image: Shopify's toxiproxy-server (built from its Go module into
# tools/bin/) on the same Debian base as the cluster. Its build context holds only this
# file (as Dockerfile) and the binary (as toxiproxy-server); see harness/images.py.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}

COPY toxiproxy-server /usr/local/bin/toxiproxy-server
EXPOSE 8474

ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/usr/local/bin/toxiproxy-server"]
CMD ["-host", "0.0.0.0", "-port", "8474"]

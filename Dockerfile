# corl and versitygw in one image; docker-compose.yml runs workers from it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /out/corl ./cmd/corl \
 && GOBIN=/out CGO_ENABLED=0 go install github.com/versity/versitygw/cmd/versitygw@v1.8.0

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/corl /out/versitygw /usr/local/bin/
COPY examples /opt/corl/examples
WORKDIR /opt/corl
ENTRYPOINT ["corl"]

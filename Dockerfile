# Build the attune binary, then ship it alone on a small base image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=docker
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/attune ./cmd/attune

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/attune /usr/local/bin/attune
ENV ATTUNE_ADDR=0.0.0.0:8080
EXPOSE 8080
USER nonroot
ENTRYPOINT ["/usr/local/bin/attune"]
CMD ["serve"]

package server

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// tracingWanted reports whether the standard OpenTelemetry variables ask for traces to be
// exported: an exporter named in OTEL_TRACES_EXPORTER other than none, or an OTLP endpoint.
// Unset, the server makes no spans and exports nothing.
func tracingWanted(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if e := getenv("OTEL_TRACES_EXPORTER"); e != "" {
		return !strings.EqualFold(e, "none")
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// startTracing installs the OpenTelemetry SDK as the global tracer provider when the
// environment asks for it (tracingWanted): the exporter (OTLP over HTTP or gRPC, or console)
// and its endpoint, the sampler and the resource come from the OTEL_* variables, the service
// name defaulting to delayq. It returns the provider's shutdown, which flushes the last spans.
func startTracing(ctx context.Context) (shutdown func(context.Context) error, err error) {
	if !tracingWanted(os.Getenv) {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry trace exporter: %w", err)
	}
	// The environment's resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins over these.
	attrs := []attribute.KeyValue{semconv.ServiceName("delayq")}
	if bi, ok := debug.ReadBuildInfo(); ok {
		attrs = append(attrs, semconv.ServiceVersion(bi.Main.Version))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, nil
}

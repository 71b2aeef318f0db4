package delayq_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
)

// exampleRedis is a redis-server of the examples' own, started by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	os.Exit(redistest.RunWithServer(m, &exampleRedis, redistest.WithAppendOnly("everysec")))
}

func Example() {
	ctx := context.Background()
	rdb := exampleRedis.NewClient() // any redis.UniversalClient: standalone, Sentinel or Cluster
	defer rdb.Close()

	client, err := delayq.New(ctx, rdb, delayq.Config{Namespace: "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Cancel order 42 if it is still unpaid in 100 ms (30 minutes in real life).
	_, err = client.Enqueue(ctx, "cancel-unpaid", delayq.Spec{
		ID:    "order-42",
		Body:  []byte(`{"order":42}`),
		Delay: 100 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}

	done := make(chan struct{})
	worker, _ := delayq.NewWorker(client, delayq.WorkerConfig{Concurrency: 4})
	worker.Handle("cancel-unpaid", func(ctx context.Context, job *delayq.Job) error {
		fmt.Printf("cancelling %s: %s\n", job.ID, job.Body)
		close(done)
		return nil // acked; an error would retry it after its backoff step
	})
	worker.Start(ctx)
	<-done
	worker.Stop(ctx) // waits for running handlers
	// Output: cancelling order-42: {"order":42}
}

func ExampleClient_Reserve() {
	ctx := context.Background()
	rdb := exampleRedis.NewClient()
	defer rdb.Close()
	client, _ := delayq.New(ctx, rdb, delayq.Config{Namespace: "example-reserve"})
	defer client.Close()

	client.Enqueue(ctx, "notify", delayq.Spec{ID: "n1", Body: []byte("retry the payment webhook")})
	jobs, err := client.Reserve(ctx, "notify", delayq.ReserveOptions{Max: 10, Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for _, job := range jobs {
		fmt.Println(job.ID, string(job.Body), job.Attempts)
		client.Ack(ctx, delayq.Lease{Topic: "notify", ID: job.ID, Token: job.LeaseToken})
	}
	// Output: n1 retry the payment webhook 1
}

// A Middleware wraps every handler of a Worker: here, one that tags each job's work with its
// tenant, read from the job's headers. Package middleware has ready-made ones (logging,
// metrics, timeouts, tracing).
func ExampleWorker_Use() {
	ctx := context.Background()
	rdb := exampleRedis.NewClient()
	defer rdb.Close()
	client, err := delayq.New(ctx, rdb, delayq.Config{Namespace: "example-use"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	tenant := func(next delayq.Handler) delayq.Handler {
		return func(ctx context.Context, job *delayq.Job) error {
			fmt.Printf("tenant %s: ", job.Headers["tenant"])
			return next(ctx, job)
		}
	}
	done := make(chan struct{})
	worker, _ := delayq.NewWorker(client, delayq.WorkerConfig{})
	worker.Use(tenant)
	worker.Handle("reports", func(ctx context.Context, job *delayq.Job) error {
		fmt.Printf("report %s\n", job.ID)
		close(done)
		return nil
	})
	_, err = client.Enqueue(ctx, "reports", delayq.Spec{ID: "r-7", Headers: map[string]string{"Tenant": "acme"}})
	if err != nil {
		log.Fatal(err)
	}
	worker.Start(ctx)
	<-done
	worker.Stop(ctx)
	// Output: tenant acme: report r-7
}

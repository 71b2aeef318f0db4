package webhook

import (
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/delayq/delayq"

	"github.com/delayq/delayq/internal/testwait"
)

// While a secret is rotated, every delivery carries a signature with each secret, so that a
// receiver that knows either one verifies — with this package's independent check and with the
// Standard Webhooks reference library for Go.
func TestDeliverSignedWithPreviousSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t, nil, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	e.enqueue(t, "orders", delayq.Spec{ID: "rotated", Body: []byte(`{"order":1}`), Format: delayq.FormatJSON, CallbackURL: rcv.url("/hook")})
	current := NewSecret()
	e.start(t, Config{Secret: mustSecret(t, current), PreviousSecret: mustSecret(t, testSecret)})

	testwait.For(t, 10*time.Second, "the delivery", func() bool { return rcv.count() >= 1 })
	d := rcv.deliveries()[0]
	sigs := strings.Fields(d.header.Get("webhook-signature"))
	if len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") {
		t.Fatalf("webhook-signature %q, want two space-separated v1 signatures", d.header.Get("webhook-signature"))
	}
	for _, secret := range []string{current, testSecret} {
		if err := verifyStandardWebhook(secret, d.header, d.body, time.Now()); err != nil {
			t.Errorf("a receiver that knows only %s…: %v", secret[:10], err)
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatalf("standardwebhooks.NewWebhook: %v", err)
		}
		if err := wh.Verify(d.body, d.header); err != nil {
			t.Errorf("the standardwebhooks library with only %s…: %v", secret[:10], err)
		}
	}
	other := NewSecret()
	if err := verifyStandardWebhook(other, d.header, d.body, time.Now()); err == nil {
		t.Error("the delivery verifies with a third secret")
	}
	if wh, _ := standardwebhooks.NewWebhook(other); wh.Verify(d.body, d.header) == nil {
		t.Error("the standardwebhooks library verifies the delivery with a third secret")
	}
}

// Without a previous secret, a delivery carries one signature.
func TestDeliverSignedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t, nil, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	e.enqueue(t, "orders", delayq.Spec{ID: "plain", CallbackURL: rcv.url("/hook")})
	e.start(t, Config{})
	testwait.For(t, 10*time.Second, "the delivery", func() bool { return rcv.count() >= 1 })
	h := rcv.deliveries()[0].header
	if sigs := strings.Fields(h.Get("webhook-signature")); len(sigs) != 1 {
		t.Errorf("webhook-signature %q, want one signature", h.Get("webhook-signature"))
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := NewSecret(), NewSecret()
	if a == b {
		t.Fatalf("NewSecret returned %q twice", a)
	}
	for _, s := range []string{a, b} {
		key, err := ParseSecret(s)
		if err != nil || len(key) != 32 {
			t.Errorf("ParseSecret(NewSecret()) = %d bytes, %v; want 32 bytes", len(key), err)
		}
		if _, err := standardwebhooks.NewWebhook(s); err != nil {
			t.Errorf("standardwebhooks.NewWebhook(NewSecret()): %v", err)
		}
	}
}

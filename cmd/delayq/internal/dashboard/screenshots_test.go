package dashboard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// seedScreenshots fills s with the topics and jobs the screenshots show.
func seedScreenshots(t *testing.T, s *site) {
	t.Helper()
	for i, topic := range []string{"emails", "invoices.eu-1", "order-timeouts", "webhooks.retry"} {
		for j := range 3 + 4*i {
			s.enqueue(topic, delayq.Spec{Delay: time.Duration(j+1) * time.Minute, Body: []byte(fmt.Sprintf(`{"n":%d}`, j)), Format: delayq.FormatJSON})
		}
	}
	for i := range 3 {
		s.buryWith("payments", fmt.Sprintf("pay-%d", 1001+i), "payment gateway answered 503 Service Unavailable")
	}
	s.enqueue("payments", delayq.Spec{ID: "pay-2001", Delay: 10 * time.Minute,
		Body: []byte(`{"order": 2001, "amount": {"value": "49.90", "currency": "EUR"}, "customer": "c-118"}`), Format: delayq.FormatJSON})
	s.enqueue("payments", delayq.Spec{ID: "pay-2002"})
	if _, err := s.client.Reserve(context.Background(), "payments", delayq.ReserveOptions{Max: 1}); err != nil {
		t.Fatal(err)
	}
}

package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq"
)

// secretPrefix starts a Standard Webhooks secret.
const secretPrefix = "whsec_"

// Secret lengths the Standard Webhooks specification asks for.
const (
	minSecret = 24
	maxSecret = 64
)

// ParseSecret returns the key bytes of a Standard Webhooks secret: "whsec_" followed by the
// standard base64 of 24 to 64 random bytes (padding optional). Anything else is an error, which
// never quotes the secret.
func ParseSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return nil, errors.New(`webhook: the secret must start with "whsec_"`)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(rest)
	}
	if err != nil {
		return nil, errors.New(`webhook: the secret must be "whsec_" followed by standard base64`)
	}
	if len(key) < minSecret || len(key) > maxSecret {
		return nil, errors.New("webhook: the secret must hold 24 to 64 bytes")
	}
	return key, nil
}

// newSecretBytes is how many random bytes NewSecret draws: 256 bits, an HMAC-SHA256 key of full
// strength.
const newSecretBytes = 32

// NewSecret returns a fresh random Standard Webhooks secret: "whsec_" and the standard base64
// (padded) of 32 bytes from crypto/rand, a form that ParseSecret and the standardwebhooks
// libraries of every language accept.
func NewSecret() string {
	key := make([]byte, newSecretBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails: it crashes the program first
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Sign returns the Standard Webhooks signature of one message, "v1," followed by the base64 of
// HMAC-SHA256(key, msgID + "." + unix seconds of ts + "." + body): the value of the
// webhook-signature header.
func Sign(key []byte, msgID string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// signature returns the webhook-signature header of one message: its signature with Secret,
// then, while a rotation is under way, a space and its signature with PreviousSecret. The
// Standard Webhooks specification has receivers accept a message when any one of the
// space-separated signatures matches.
func (d *Dispatcher) signature(msgID string, ts time.Time, body []byte) string {
	sig := Sign(d.cfg.Secret, msgID, ts, body)
	if len(d.cfg.PreviousSecret) > 0 {
		sig += " " + Sign(d.cfg.PreviousSecret, msgID, ts, body)
	}
	return sig
}

// messageID returns a job's webhook-id: "msg_" and 24 base64url characters of the SHA-256 of
// its topic, id and creation time. It stays the same over every retry of the job (receivers use
// it to drop repeated deliveries, as the Standard Webhooks specification intends), and differs
// for a later job that reuses the id after this one has gone.
func messageID(job *delayq.Job) string {
	h := sha256.New()
	h.Write([]byte(job.Topic))
	h.Write([]byte{0})
	h.Write([]byte(job.ID))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, job.CreatedAt.UnixMilli(), 10))
	return "msg_" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	reviewv1 "k8s.io/api/admission/v1"
)

// admitFunc answers one admission request.
type admitFunc func(ctx context.Context, req *reviewv1.AdmissionRequest) *reviewv1.AdmissionResponse

// serveReview is the HTTP side every webhook here shares: it reads a POSTed
// AdmissionReview (at most maxReview bytes), has admit answer its request
// within 10 s, and writes the review back with the response and the
// request's UID.
func serveReview(w http.ResponseWriter, r *http.Request, admit admitFunc) {
	if r.Method != http.MethodPost {
		http.Error(w, "webhook: POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReview))
	if err != nil {
		http.Error(w, "webhook: read review: "+err.Error(), http.StatusBadRequest)
		return
	}
	var review reviewv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("webhook: not an AdmissionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	resp := admit(ctx, review.Request)
	resp.UID = review.Request.UID
	out, err := json.Marshal(reviewv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(w, "webhook: encode review: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

package forgetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// runtimeClaims mirrors the claims of Gitea's actions runtime token.
type runtimeClaims struct {
	NotBefore int64  `json:"nbf"`
	Expires   int64  `json:"exp"`
	Scope     string `json:"scp"` // Actions.Results:<run>:<job>
	TaskID    int64
	RunID     int64
	JobID     int64
	Access    string `json:"ac"`
}

// runtimeToken builds an HS256 JWT shaped like Gitea's gitea_runtime_token,
// valid for 1 h + 3 h (ENDLESS_TASK_TIMEOUT) from now.
func runtimeToken(key []byte, now time.Time, taskID int64, runID string, jobID int64) string {
	run, _ := strconv.ParseInt(runID, 10, 64) // non-numeric run ids give 0
	ac, _ := json.Marshal([]map[string]string{{"Scope": fmt.Sprintf("Actions.Results:%d:%d", run, jobID), "Permission": "write"}})
	claims := runtimeClaims{
		NotBefore: now.Unix(),
		Expires:   now.Add(4 * time.Hour).Unix(),
		Scope:     fmt.Sprintf("Actions.Results:%d:%d", run, jobID),
		TaskID:    taskID,
		RunID:     run,
		JobID:     jobID,
		Access:    string(ac),
	}
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body, _ := json.Marshal(claims) // plain struct, cannot fail
	signing := header + "." + enc.EncodeToString(body)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

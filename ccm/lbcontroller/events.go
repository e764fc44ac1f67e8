package lbcontroller

import (
	"regexp"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// maxEventMessage bounds an Event's message (the events API truncates
// notes at 1 KiB); longer messages are cut with a marker.
const maxEventMessage = 1024

// attemptRE matches the parts of a message that change on every retry of
// the same failure.
var attemptRE = regexp.MustCompile(`\(attempt \d+\)|attempt \d+`)

// events records tfccm's Events. A Warning identical (up to the attempt
// count) to the last one on the same object is logged but not recorded
// again: client-go's per-object spam filter would otherwise drop the Event
// of a new, different problem after a run of retries. A Normal Event on
// the object starts over.
type events struct {
	mu       sync.Mutex
	recorder record.EventRecorder // nil until Initialize
	last     map[types.UID]string // object -> reason and message of its last Warning
}

func newEvents() *events { return &events{last: map[types.UID]string{}} }

func (e *events) setRecorder(r record.EventRecorder) {
	e.mu.Lock()
	e.recorder = r
	e.mu.Unlock()
}

// event records an Event on obj (an eventFunc).
func (e *events) event(obj runtime.Object, eventType, reason, message string) {
	message = truncateMessage(message)
	meta, _ := obj.(metav1.Object)
	e.mu.Lock()
	rec := e.recorder
	repeat := false
	if meta != nil {
		uid := meta.GetUID()
		if eventType == corev1.EventTypeWarning {
			key := reason + "\x00" + attemptRE.ReplaceAllString(message, "")
			repeat = e.last[uid] == key
			e.last[uid] = key
		} else {
			delete(e.last, uid)
		}
	}
	e.mu.Unlock()
	if eventType == corev1.EventTypeWarning {
		klog.InfoS("Warning event", "object", klog.KObj(meta), "reason", reason, "message", message, "repeated", repeat)
	}
	if rec != nil && !repeat {
		rec.Event(obj, eventType, reason, message)
	}
}

// eventCorrelation is how tfccm's Event broadcaster filters spam: client-go's
// token bucket (a burst of 25 Events, then one per 5 minutes) kept per object,
// type and reason rather than per object and type. With client-go's key, a
// Service that recorded 25 Warnings of one kind (drift checks failing every
// interval while a host was away, say) lost every other Warning for minutes,
// the drift repair that followed included.
func eventCorrelation() record.CorrelatorOptions {
	return record.CorrelatorOptions{SpamKeyFunc: spamKey}
}

// spamKey is client-go's spam key with the reason added.
func spamKey(ev *corev1.Event) string {
	o := ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, ev.Type, ev.Reason}, "\x00")
}

func truncateMessage(m string) string {
	if len(m) <= maxEventMessage {
		return m
	}
	const marker = "... (truncated)"
	cut := maxEventMessage - len(marker)
	for cut > 0 && m[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return m[:cut] + marker
}

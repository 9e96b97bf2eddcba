package cluster

import (
	"math"
	"strconv"

	"github.com/flowgate/flowgate/flow"
)

// Striping (flow.Rule.Stripes) spreads a global rule over N keys whose hash
// tags differ, so that on Redis Cluster its commands go to N hash slots
// instead of one: the unstriped key {resource|global|} is one slot on one
// master, which then serves every decision of the rule.
//
// Each stripe holds an equal share of the limit (whole permits for the
// counting algorithms, the remainder spread over the first stripes), and
// a call takes from one stripe, chosen round-robin per instance: a counter
// spreads the calls evenly whatever their timing, where a random pick
// leaves some stripes busier by chance and an instance-bound stripe
// starves when instances carry unequal traffic. A call its stripe refuses
// is refused, even if another stripe has room: one round trip per call,
// and a refusal costs no more commands than an admission (retrying other
// stripes would multiply the commands exactly when the rule is over its
// limit). The cluster then admits at most the limit, and under it by what
// the stripes' counts differ at the window's end: with round-robin, about
// one call per stripe and instance.
//
// Stripe i's tag is chosen so that its hash slot falls in the i-th N-th
// of the 16384 slots: on a cluster whose masters own equal runs of slots
// (what redis-cli --cluster create makes), N stripes over N masters put
// one stripe on each master.

// stripe is one stripe of a striped plan: its index, the count, and the key
// its tag carries in place of a user or IP.
type stripe struct {
	i, of int
	key   string
}

// share is stripe st's part of a rule's limit: the whole limit when the
// rule is not striped.
func (st stripe) share(r *flow.Rule, limit float64) float64 {
	if st.of <= 1 {
		return limit
	}
	switch r.Algorithm {
	case flow.AlgoFixedWindow, flow.AlgoSlidingLog:
		// Whole permits: stripe i gets floor(c(i+1)/N) - floor(ci/N), so the
		// stripes sum to the rule's capacity c; at least one when an
		// adaptive factor scales the limit below the stripes.
		c, n, i := float64(capacity(limit)), float64(st.of), float64(st.i)
		return max(1, math.Floor(c*(i+1)/n)-math.Floor(c*i/n))
	}
	return limit / float64(st.of)
}

// stripeTags returns the key of each of n stripes of resource's rule at
// level lvl: "stripe-i", or "stripe-i.j" for the first j that puts the
// key's hash tag {resource|lvl|key} in the i-th n-th of the slots.
func stripeTags(resource, lvl string, n int) []string {
	tags := make([]string, n)
	for i := range n {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n
		base := "stripe-" + strconv.Itoa(i)
		tag := base
		for j := 1; j < 1<<16; j++ {
			if s := int(keySlot(resource + "|" + lvl + "|" + tag)); s >= lo && s < hi {
				break
			}
			tag = base + "." + strconv.Itoa(j)
		}
		tags[i] = tag
	}
	return tags
}

// clusterSlots is Redis Cluster's number of hash slots.
const clusterSlots = 16384

// keySlot is the Redis Cluster hash slot of a hash tag's content:
// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0) mod 16384, as
// the Redis Cluster specification defines it.
func keySlot(tag string) uint16 {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % clusterSlots
}

// Package sentinel runs sentinel-golang v1.0.4 and flowgate side by side on
// one virtual timeline, on rules imported with rules/sentinel, and
// measures how often both decide a call the same way, whether every call
// both admit is given the same wait, and whether every circuit breaker
// state change happens at the same virtual instant. It is a module of
// its own so that the core never depends on sentinel-golang; its tests are
// the evidence for the table in the README's "Moving from Sentinel".
package sentinel

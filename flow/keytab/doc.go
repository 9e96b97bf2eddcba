// Package keytab owns bounded per-key tables: one value per key (a user, a
// client IP, a parameter's value) for at most a fixed number of keys, with
// idle keys forgotten and the least recently used evicted when full.
//
// Keys are compared by value, never by a hash alone, and each key's value
// is its own object: an evicted key's value is dropped, never handed to the
// key that takes its place.
package keytab

// Package cpuconfig owns the settings of flowgate's CPU-driven control: the
// controller's target, band and step sizes, the system guard, and what the
// CPU is measured on. It holds each setting, its default and its valid
// range, and nothing that measures or acts, so that reading a rules
// document's "adaptive" section (package rules) does not pull in the CPU
// samplers of package adaptive, which uses these settings.
package cpuconfig

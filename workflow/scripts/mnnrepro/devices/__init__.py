"""Devices (rules in workflow/rules/devices.smk and emulation.smk): where an engine runs.
base holds the interface and the host process runner; local, adb and qemu are the device
kinds; userland fetches QEMU and its arm64 userland; factory builds a device from config."""

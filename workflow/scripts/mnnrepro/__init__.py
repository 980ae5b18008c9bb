"""mnnrepro: the logic behind the mnn-sme2-repro workflow.

Import-free on purpose: each module pulls in only what it needs, so a rule's
environment needs only the dependencies of the modules its script imports.
"""

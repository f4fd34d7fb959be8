"""The answer stage every pipeline shares, and the checks it makes without a model: reading
the evidence for a short answer, splitting an answer into claims, and checking each claim
against the evidence it cites."""

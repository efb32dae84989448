"""The HTTP edge: one controller module per resource, thin (the request decoded, the service
called, its answer encoded); what they do lives in the packages below."""

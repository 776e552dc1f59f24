package duroxide

import "github.com/duroxide-go/cdb/internal/wirejson"

// appendErrorDetails appends the externally tagged wire form of v.
func appendErrorDetails(b []byte, v ErrorDetails) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case InfrastructureError:
		b = append(b, `{"Infrastructure":{`...)
		b = appendStrField(b, "operation", x.Operation)
		b = appendStrField(b, "message", x.Message)
		b = appendBoolField(b, "retryable", x.Retryable)
	case ConfigurationError:
		if x.Kind != ConfigNondeterminism {
			return nil, &EncodeError{Path: "Configuration.kind", Msg: "unknown ConfigErrorKind " + quote(string(x.Kind))}
		}
		b = append(b, `{"Configuration":{"kind":"Nondeterminism"`...)
		b = appendStrField(b, "resource", x.Resource)
		b = appendOptStrField(b, "message", x.Message)
	case ApplicationError:
		b = append(b, `{"Application":{"kind":`...)
		if b, err = appendAppErrorKind(b, x.Kind); err != nil {
			return nil, prefixEncode(err, "Application.kind")
		}
		b = appendStrField(b, "message", x.Message)
		b = appendBoolField(b, "retryable", x.Retryable)
	case PoisonError:
		b = append(b, `{"Poison":{`...)
		b = appendU64Field(b, "attempt_count", uint64(x.AttemptCount))
		b = appendU64Field(b, "max_attempts", uint64(x.MaxAttempts))
		b = appendKey(b, "message_type")
		if b, err = appendPoisonMessageType(b, x.MessageType); err != nil {
			return nil, prefixEncode(err, "Poison.message_type")
		}
		b = appendStrField(b, "message", x.Message)
	case nil:
		return nil, &EncodeError{Msg: "ErrorDetails is nil"}
	default:
		elem, _, isNil := deref(v)
		if isNil {
			return nil, &EncodeError{Msg: "ErrorDetails is a nil " + typeName(v)}
		}
		if ed, ok := elem.(ErrorDetails); ok {
			return appendErrorDetails(b, ed)
		}
		return nil, &EncodeError{Msg: "unsupported ErrorDetails " + typeName(v)}
	}
	return append(b, '}', '}'), nil
}

// appendAppErrorKind writes a unit variant as a bare string and Cancelled
// as {"Cancelled":{"reason":...}}.
func appendAppErrorKind(b []byte, k AppErrorKind) ([]byte, error) {
	switch k.Type {
	case AppActivityFailed, AppOrchestrationFailed, AppPanicked:
		if k.Reason != "" {
			return nil, &EncodeError{Msg: "Reason is only carried by " + string(AppCancelled) + ", not " + string(k.Type)}
		}
		b = append(b, '"')
		b = append(b, k.Type...)
		return append(b, '"'), nil
	case AppCancelled:
		b = append(b, `{"Cancelled":{"reason":`...)
		b = appendString(b, k.Reason)
		return append(b, '}', '}'), nil
	}
	return nil, &EncodeError{Msg: "unknown AppErrorKind " + quote(string(k.Type))}
}

// appendPoisonMessageType writes {"Kind":{...}} with the fields of Kind.
func appendPoisonMessageType(b []byte, m PoisonMessageType) ([]byte, error) {
	switch m.Kind {
	case PoisonOrchestration:
		if m.ActivityName != "" || m.ActivityID != 0 || m.Error != "" {
			return nil, &EncodeError{Msg: "Orchestration carries only Instance and ExecutionID"}
		}
		b = append(b, `{"Orchestration":{`...)
		b = appendStrField(b, "instance", m.Instance)
		b = appendU64Field(b, "execution_id", m.ExecutionID)
	case PoisonActivity:
		if m.Error != "" {
			return nil, &EncodeError{Msg: "Activity does not carry Error"}
		}
		b = append(b, `{"Activity":{`...)
		b = appendStrField(b, "instance", m.Instance)
		b = appendU64Field(b, "execution_id", m.ExecutionID)
		b = appendStrField(b, "activity_name", m.ActivityName)
		b = appendU64Field(b, "activity_id", m.ActivityID)
	case PoisonFailedDeserialization:
		if m.ActivityName != "" || m.ActivityID != 0 {
			return nil, &EncodeError{Msg: "FailedDeserialization does not carry ActivityName or ActivityID"}
		}
		b = append(b, `{"FailedDeserialization":{`...)
		b = appendStrField(b, "instance", m.Instance)
		b = appendU64Field(b, "execution_id", m.ExecutionID)
		b = appendStrField(b, "error", m.Error)
	default:
		return nil, &EncodeError{Msg: "unknown PoisonMessageType " + quote(string(m.Kind))}
	}
	return append(b, '}', '}'), nil
}

// Field order of the struct variants, for serde's sequence form.
var (
	errorDetailsLayouts = map[string]*layout{
		"Infrastructure": {name: "struct variant ErrorDetails::Infrastructure", order: []field{fOperation, fMessage, fRetryable}},
		"Configuration":  {name: "struct variant ErrorDetails::Configuration", order: []field{fKind, fResource, fMessage}},
		"Application":    {name: "struct variant ErrorDetails::Application", order: []field{fKind, fMessage, fRetryable}},
		"Poison":         {name: "struct variant ErrorDetails::Poison", order: []field{fAttemptCount, fMaxAttempts, fMessageType, fMessage}},
	}
	cancelledLayout = layout{name: "struct variant AppErrorKind::Cancelled", order: []field{fReason}}
	poisonLayouts   = map[PoisonKind]*layout{
		PoisonOrchestration:         {name: "struct variant PoisonMessageType::Orchestration", order: []field{fInstance, fExecutionID}},
		PoisonActivity:              {name: "struct variant PoisonMessageType::Activity", order: []field{fInstance, fExecutionID, fActivityName, fActivityID}},
		PoisonFailedDeserialization: {name: "struct variant PoisonMessageType::FailedDeserialization", order: []field{fInstance, fExecutionID, fError}},
	}
)

// errorDetails decodes an externally tagged ErrorDetails at the current
// position.
func (d *decoder) errorDetails() (ErrorDetails, error) {
	const enum = "ErrorDetails"
	pos := d.PeekPos()
	name, unit, err := d.EnumStart(enum)
	if err != nil {
		return nil, err
	}
	l := errorDetailsLayouts[name]
	if l == nil {
		return nil, &UnknownVariantError{Enum: enum, Variant: name}
	}
	if unit {
		return nil, d.Errorf(pos, "invalid type: unit variant, expected %s", l.name)
	}
	var f fields
	if err := d.collectStruct(&f, l); err != nil {
		return nil, prefixField(err, name)
	}
	end := d.Pos()
	var v ErrorDetails
	switch name {
	case "Infrastructure":
		v = InfrastructureError{
			Operation: f.str(fOperation),
			Message:   f.str(fMessage),
			Retryable: f.boolean(fRetryable),
		}
	case "Configuration":
		var kind ConfigErrorKind
		if f.seek(fKind, true) {
			var err error
			kind, err = d.configErrorKind()
			f.fail(fKind, err)
		}
		v = ConfigurationError{
			Kind:     kind,
			Resource: f.str(fResource),
			Message:  f.optStr(fMessage),
		}
	case "Application":
		var kind AppErrorKind
		if f.seek(fKind, true) {
			var err error
			kind, err = d.appErrorKind()
			f.fail(fKind, err)
		}
		v = ApplicationError{
			Kind:      kind,
			Message:   f.str(fMessage),
			Retryable: f.boolean(fRetryable),
		}
	case "Poison":
		var mt PoisonMessageType
		attempts, maxAttempts := f.u32(fAttemptCount), f.u32(fMaxAttempts)
		if f.seek(fMessageType, true) {
			var err error
			mt, err = d.poisonMessageType()
			f.fail(fMessageType, err)
		}
		v = PoisonError{
			AttemptCount: attempts,
			MaxAttempts:  maxAttempts,
			MessageType:  mt,
			Message:      f.str(fMessage),
		}
	}
	if f.err != nil {
		return nil, prefixField(f.err, name)
	}
	d.SetPos(end)
	if err := d.EnumEnd(enum); err != nil {
		return nil, err
	}
	return v, nil
}

// configErrorKind decodes ConfigErrorKind ("Nondeterminism").
func (d *decoder) configErrorKind() (ConfigErrorKind, error) {
	const enum = "ConfigErrorKind"
	name, unit, err := d.EnumStart(enum)
	if err != nil {
		return "", err
	}
	if name != string(ConfigNondeterminism) {
		return "", &UnknownVariantError{Enum: enum, Variant: name}
	}
	if !unit {
		if err := d.UnitValue(); err != nil {
			return "", prefixField(err, name)
		}
		if err := d.EnumEnd(enum); err != nil {
			return "", err
		}
	}
	return ConfigNondeterminism, nil
}

// appErrorKind decodes AppErrorKind: a unit variant name or
// {"Cancelled":{"reason":...}}.
func (d *decoder) appErrorKind() (AppErrorKind, error) {
	const enum = "AppErrorKind"
	pos := d.PeekPos()
	name, unit, err := d.EnumStart(enum)
	if err != nil {
		return AppErrorKind{}, err
	}
	switch t := AppErrorType(name); t {
	case AppActivityFailed, AppOrchestrationFailed, AppPanicked:
		if !unit {
			if err := d.UnitValue(); err != nil {
				return AppErrorKind{}, prefixField(err, name)
			}
			if err := d.EnumEnd(enum); err != nil {
				return AppErrorKind{}, err
			}
		}
		return AppErrorKind{Type: t}, nil
	case AppCancelled:
		if unit {
			return AppErrorKind{}, d.Errorf(pos, "invalid type: unit variant, expected struct variant AppErrorKind::Cancelled")
		}
		var f fields
		if err := d.collectStruct(&f, &cancelledLayout); err != nil {
			return AppErrorKind{}, prefixField(err, name)
		}
		end := d.Pos()
		reason := f.str(fReason)
		if f.err != nil {
			return AppErrorKind{}, prefixField(f.err, name)
		}
		d.SetPos(end)
		if err := d.EnumEnd(enum); err != nil {
			return AppErrorKind{}, err
		}
		return AppErrorKind{Type: AppCancelled, Reason: reason}, nil
	}
	return AppErrorKind{}, &UnknownVariantError{Enum: enum, Variant: name}
}

// poisonMessageType decodes PoisonMessageType.
func (d *decoder) poisonMessageType() (PoisonMessageType, error) {
	const enum = "PoisonMessageType"
	pos := d.PeekPos()
	name, unit, err := d.EnumStart(enum)
	if err != nil {
		return PoisonMessageType{}, err
	}
	kind := PoisonKind(name)
	l := poisonLayouts[kind]
	if l == nil {
		return PoisonMessageType{}, &UnknownVariantError{Enum: enum, Variant: name}
	}
	if unit {
		return PoisonMessageType{}, d.Errorf(pos, "invalid type: unit variant, expected %s", l.name)
	}
	var f fields
	if err := d.collectStruct(&f, l); err != nil {
		return PoisonMessageType{}, prefixField(err, name)
	}
	end := d.Pos()
	m := PoisonMessageType{Kind: kind, Instance: f.str(fInstance), ExecutionID: f.u64(fExecutionID)}
	switch kind {
	case PoisonActivity:
		m.ActivityName = f.str(fActivityName)
		m.ActivityID = f.u64(fActivityID)
	case PoisonFailedDeserialization:
		m.Error = f.str(fError)
	}
	if f.err != nil {
		return PoisonMessageType{}, prefixField(f.err, name)
	}
	d.SetPos(end)
	if err := d.EnumEnd(enum); err != nil {
		return PoisonMessageType{}, err
	}
	return m, nil
}

// MarshalJSON encodes the error in its externally tagged wire form.
func (e InfrastructureError) MarshalJSON() ([]byte, error) { return MarshalErrorDetails(e) }

// MarshalJSON encodes the error in its externally tagged wire form.
func (e ConfigurationError) MarshalJSON() ([]byte, error) { return MarshalErrorDetails(e) }

// MarshalJSON encodes the error in its externally tagged wire form.
func (e ApplicationError) MarshalJSON() ([]byte, error) { return MarshalErrorDetails(e) }

// MarshalJSON encodes the error in its externally tagged wire form.
func (e PoisonError) MarshalJSON() ([]byte, error) { return MarshalErrorDetails(e) }

// UnmarshalJSON decodes {"Infrastructure":{...}}; other variants are an
// error.
func (e *InfrastructureError) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("ErrorDetails", data, UnmarshalErrorDetails, e)
}

// UnmarshalJSON decodes {"Configuration":{...}}; other variants are an
// error.
func (e *ConfigurationError) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("ErrorDetails", data, UnmarshalErrorDetails, e)
}

// UnmarshalJSON decodes {"Application":{...}}; other variants are an
// error.
func (e *ApplicationError) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("ErrorDetails", data, UnmarshalErrorDetails, e)
}

// UnmarshalJSON decodes {"Poison":{...}}; other variants are an error.
func (e *PoisonError) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("ErrorDetails", data, UnmarshalErrorDetails, e)
}

// MarshalJSON encodes the kind as serde does: "ActivityFailed",
// "OrchestrationFailed", "Panicked" or {"Cancelled":{"reason":...}}.
func (k AppErrorKind) MarshalJSON() ([]byte, error) {
	return appendAppErrorKind(nil, k)
}

// UnmarshalJSON decodes the serde form of AppErrorKind.
func (k *AppErrorKind) UnmarshalJSON(data []byte) error {
	d := newDecoder(data, "AppErrorKind", wirejson.Options{})
	v, err := d.appErrorKind()
	if err == nil {
		err = d.Finish()
	}
	if err != nil {
		return d.typed(err)
	}
	*k = v
	return nil
}

// MarshalJSON encodes the message type as serde does, e.g.
// {"Orchestration":{"instance":...,"execution_id":...}}.
func (m PoisonMessageType) MarshalJSON() ([]byte, error) {
	return appendPoisonMessageType(nil, m)
}

// UnmarshalJSON decodes the serde form of PoisonMessageType.
func (m *PoisonMessageType) UnmarshalJSON(data []byte) error {
	d := newDecoder(data, "PoisonMessageType", wirejson.Options{})
	v, err := d.poisonMessageType()
	if err == nil {
		err = d.Finish()
	}
	if err != nil {
		return d.typed(err)
	}
	*m = v
	return nil
}

package duroxide

import "strconv"

// appendEvent appends the wire form of e: the common fields in Rust
// declaration order, then "type" and the variant's fields (serde flatten
// of an internally tagged enum).
func appendEvent(b []byte, e *Event) ([]byte, error) {
	kind := e.Kind
	if kind == nil {
		return nil, &EncodeError{Path: "Event " + strconv.FormatUint(e.EventID, 10), Msg: "Kind is nil"}
	}
	b = append(b, `{"event_id":`...)
	b = strconv.AppendUint(b, e.EventID, 10)
	b = appendOptU64Field(b, "source_event_id", e.SourceEventID)
	b = appendStrField(b, "instance_id", e.InstanceID)
	b = appendU64Field(b, "execution_id", e.ExecutionID)
	b = appendU64Field(b, "timestamp_ms", e.TimestampMs)
	b = appendStrField(b, "duroxide_version", e.DuroxideVersion)
	return appendEventKind(b, kind, e.EventID)
}

func appendEventKind(b []byte, kind EventKind, id uint64) ([]byte, error) {
	b = append(b, `,"type":"`...)
	var err error
	switch k := kind.(type) {
	case OrchestrationStarted:
		b = append(b, TypeOrchestrationStarted+`"`...)
		b = appendStrField(b, "name", k.Name)
		b = appendStrField(b, "version", k.Version)
		b = appendStrField(b, "input", k.Input)
		b = appendOptStrField(b, "parent_instance", k.ParentInstance)
		b = appendOptU64Field(b, "parent_id", k.ParentID)
		b = appendSkipU64Field(b, "parent_execution_id", k.ParentExecutionID)
		if k.CarryForwardEvents != nil {
			b = appendCarry(appendKey(b, "carry_forward_events"), k.CarryForwardEvents)
		}
		b = appendSkipStrField(b, "initial_custom_status", k.InitialCustomStatus)
	case OrchestrationCompleted:
		b = append(b, TypeOrchestrationCompleted+`"`...)
		b = appendStrField(b, "output", k.Output)
	case OrchestrationFailed:
		b = append(b, TypeOrchestrationFailed+`"`...)
		b, err = appendDetailsField(b, k.Details)
	case ActivityScheduled:
		b = append(b, TypeActivityScheduled+`"`...)
		b = appendStrField(b, "name", k.Name)
		b = appendStrField(b, "input", k.Input)
		b = appendSkipStrField(b, "session_id", k.SessionID)
		b = appendSkipStrField(b, "tag", k.Tag)
	case ActivityCompleted:
		b = append(b, TypeActivityCompleted+`"`...)
		b = appendStrField(b, "result", k.Result)
	case ActivityFailed:
		b = append(b, TypeActivityFailed+`"`...)
		b, err = appendDetailsField(b, k.Details)
	case ActivityCancelRequested:
		b = append(b, TypeActivityCancelRequested+`"`...)
		b = appendStrField(b, "reason", k.Reason)
	case TimerCreated:
		b = append(b, TypeTimerCreated+`"`...)
		b = appendU64Field(b, "fire_at_ms", k.FireAtMs)
	case TimerFired:
		b = append(b, TypeTimerFired+`"`...)
		b = appendU64Field(b, "fire_at_ms", k.FireAtMs)
	case ExternalSubscribed:
		b = append(b, TypeExternalSubscribed+`"`...)
		b = appendStrField(b, "name", k.Name)
	case ExternalEvent:
		b = append(b, TypeExternalEvent+`"`...)
		b = appendStrField(b, "name", k.Name)
		b = appendStrField(b, "data", k.Data)
	case OrchestrationChained:
		b = append(b, TypeOrchestrationChained+`"`...)
		b = appendStrField(b, "name", k.Name)
		b = appendStrField(b, "instance", k.Instance)
		b = appendStrField(b, "input", k.Input)
	case SubOrchestrationScheduled:
		b = append(b, TypeSubOrchestrationScheduled+`"`...)
		b = appendStrField(b, "name", k.Name)
		b = appendStrField(b, "instance", k.Instance)
		b = appendStrField(b, "input", k.Input)
	case SubOrchestrationCompleted:
		b = append(b, TypeSubOrchestrationCompleted+`"`...)
		b = appendStrField(b, "result", k.Result)
	case SubOrchestrationFailed:
		b = append(b, TypeSubOrchestrationFailed+`"`...)
		b, err = appendDetailsField(b, k.Details)
	case SubOrchestrationCancelRequested:
		b = append(b, TypeSubOrchestrationCancelRequested+`"`...)
		b = appendStrField(b, "reason", k.Reason)
	case OrchestrationContinuedAsNew:
		b = append(b, TypeOrchestrationContinuedAsNew+`"`...)
		b = appendStrField(b, "input", k.Input)
	case OrchestrationCancelRequested:
		b = append(b, TypeOrchestrationCancelRequested+`"`...)
		b = appendStrField(b, "reason", k.Reason)
	case ExternalSubscribedCancelled:
		b = append(b, TypeExternalSubscribedCancelled+`"`...)
		b = appendStrField(b, "reason", k.Reason)
	case ExternalSubscribedPersistent:
		b = append(b, TypeExternalSubscribedPersistent+`"`...)
		b = appendStrField(b, "name", k.Name)
	case ExternalEventPersistent:
		b = append(b, TypeExternalEventPersistent+`"`...)
		b = appendStrField(b, "name", k.Name)
		b = appendStrField(b, "data", k.Data)
	case ExternalSubscribedPersistentCancelled:
		b = append(b, TypeExternalSubscribedPersistentCancelled+`"`...)
		b = appendStrField(b, "reason", k.Reason)
	case CustomStatusUpdated:
		b = append(b, TypeCustomStatusUpdated+`"`...)
		b = appendOptStrField(b, "status", k.Status)
	case KeyValueSet:
		b = append(b, TypeKeyValueSet+`"`...)
		b = appendStrField(b, "key", k.Key)
		b = appendStrField(b, "value", k.Value)
		b = appendU64Field(b, "last_updated_at_ms", k.LastUpdatedAtMs)
	case KeyValueCleared:
		b = append(b, TypeKeyValueCleared+`"`...)
		b = appendStrField(b, "key", k.Key)
	case KeyValuesCleared:
		b = append(b, TypeKeyValuesCleared+`"`...)
	default:
		elem, isPtr, isNil := deref(kind)
		if isNil {
			return nil, &EncodeError{Path: "Event " + strconv.FormatUint(id, 10), Msg: "Kind is a nil " + typeName(kind)}
		}
		if ek, ok := elem.(EventKind); ok && isPtr {
			return appendEventKind(b[:len(b)-len(`,"type":"`)], ek, id)
		}
		return nil, &EncodeError{Path: "Event " + strconv.FormatUint(id, 10), Msg: "unsupported EventKind " + typeName(kind)}
	}
	if err != nil {
		return nil, prefixEncode(err, "Event "+strconv.FormatUint(id, 10)+" ("+kind.EventType()+")")
	}
	return append(b, '}'), nil
}

// appendDetailsField writes "details":<ErrorDetails>.
func appendDetailsField(b []byte, d ErrorDetails) ([]byte, error) {
	if d == nil {
		return nil, &EncodeError{Path: "details", Msg: "ErrorDetails is nil"}
	}
	b, err := appendErrorDetails(appendKey(b, "details"), d)
	if err != nil {
		return nil, prefixEncode(err, "details")
	}
	return b, nil
}

// event decodes an Event object at the current position.
func (d *decoder) event(e *Event) error {
	var f fields
	if err := d.collect(&f, "struct Event"); err != nil {
		return err
	}
	end := d.Pos()
	e.EventID = f.u64(fEventID)
	e.SourceEventID = f.optU64(fSourceEventID)
	e.InstanceID = f.str(fInstanceID)
	e.ExecutionID = f.u64(fExecutionID)
	e.TimestampMs = f.u64(fTimestampMs)
	e.DuroxideVersion = f.str(fDuroxideVersion)
	typ := f.str(fType)
	if f.err != nil {
		return f.err
	}
	switch typ {
	case TypeOrchestrationStarted:
		e.Kind = OrchestrationStarted{
			Name:                f.str(fName),
			Version:             f.str(fVersion),
			Input:               f.str(fInput),
			ParentInstance:      f.optStr(fParentInstance),
			ParentID:            f.optU64(fParentID),
			ParentExecutionID:   f.optU64(fParentExecutionID),
			CarryForwardEvents:  f.carry(fCarryForwardEvents, true),
			InitialCustomStatus: f.optStr(fInitialCustomStatus),
		}
	case TypeOrchestrationCompleted:
		e.Kind = OrchestrationCompleted{Output: f.str(fOutput)}
	case TypeOrchestrationFailed:
		e.Kind = OrchestrationFailed{Details: f.details(fDetails)}
	case TypeActivityScheduled:
		e.Kind = ActivityScheduled{
			Name:      f.str(fName),
			Input:     f.str(fInput),
			SessionID: f.optStr(fSessionID),
			Tag:       f.optStr(fTag),
		}
	case TypeActivityCompleted:
		e.Kind = ActivityCompleted{Result: f.str(fResult)}
	case TypeActivityFailed:
		e.Kind = ActivityFailed{Details: f.details(fDetails)}
	case TypeActivityCancelRequested:
		e.Kind = ActivityCancelRequested{Reason: f.str(fReason)}
	case TypeTimerCreated:
		e.Kind = TimerCreated{FireAtMs: f.u64(fFireAtMs)}
	case TypeTimerFired:
		e.Kind = TimerFired{FireAtMs: f.u64(fFireAtMs)}
	case TypeExternalSubscribed:
		e.Kind = ExternalSubscribed{Name: f.str(fName)}
	case TypeExternalEvent:
		e.Kind = ExternalEvent{Name: f.str(fName), Data: f.str(fData)}
	case TypeOrchestrationChained:
		e.Kind = OrchestrationChained{Name: f.str(fName), Instance: f.str(fInstance), Input: f.str(fInput)}
	case TypeSubOrchestrationScheduled:
		e.Kind = SubOrchestrationScheduled{Name: f.str(fName), Instance: f.str(fInstance), Input: f.str(fInput)}
	case TypeSubOrchestrationCompleted:
		e.Kind = SubOrchestrationCompleted{Result: f.str(fResult)}
	case TypeSubOrchestrationFailed:
		e.Kind = SubOrchestrationFailed{Details: f.details(fDetails)}
	case TypeSubOrchestrationCancelRequested:
		e.Kind = SubOrchestrationCancelRequested{Reason: f.str(fReason)}
	case TypeOrchestrationContinuedAsNew:
		e.Kind = OrchestrationContinuedAsNew{Input: f.str(fInput)}
	case TypeOrchestrationCancelRequested:
		e.Kind = OrchestrationCancelRequested{Reason: f.str(fReason)}
	case TypeExternalSubscribedCancelled:
		e.Kind = ExternalSubscribedCancelled{Reason: f.str(fReason)}
	case TypeExternalSubscribedPersistent:
		e.Kind = ExternalSubscribedPersistent{Name: f.str(fName)}
	case TypeExternalEventPersistent:
		e.Kind = ExternalEventPersistent{Name: f.str(fName), Data: f.str(fData)}
	case TypeExternalSubscribedPersistentCancelled:
		e.Kind = ExternalSubscribedPersistentCancelled{Reason: f.str(fReason)}
	case TypeCustomStatusUpdated:
		e.Kind = CustomStatusUpdated{Status: f.optStr(fStatus)}
	case TypeKeyValueSet:
		e.Kind = KeyValueSet{Key: f.str(fKey), Value: f.str(fValue), LastUpdatedAtMs: f.u64Default(fLastUpdatedAtMs)}
	case TypeKeyValueCleared:
		e.Kind = KeyValueCleared{Key: f.str(fKey)}
	case TypeKeyValuesCleared:
		e.Kind = KeyValuesCleared{}
	default:
		return &UnknownVariantError{Enum: "EventKind", Variant: typ, Field: "type"}
	}
	if f.err != nil {
		e.Kind = nil
		return f.err
	}
	d.SetPos(end)
	return nil
}
